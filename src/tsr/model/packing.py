"""Packing a training batch: its examples laid end to end in fewer rows (``train.packing``).

A right-padded batch of B rows of width W spends ``B x W`` positions on the transformer, many of
them padding when lengths differ. Packed, the same examples sit end to end in as few rows of
width W as first-fit-decreasing finds, each with its own position ids from 0; transformers
turns position ids that restart into a block-diagonal causal mask (``masking_utils``,
``find_packed_sequence_indices``, when no attention mask is given), so no example attends to
another. The decoder's last hidden states are then put back into the batch's own row layout
(zeros at padding) and everything after them (the head, the losses, the teacher alignment) reads
the batch as before: the same examples per step, the same losses up to float rounding.

This is not TRL's packing, which fills rows with as many examples as fit and so changes how many
examples a step trains on; here a step trains on exactly the examples it drew, as the paper's
batch of 4 asks, and only the padding goes. It needs a decoder that takes ``position_ids`` and
a transformers that builds the packed mask (5.x does, for eager and SDPA attention).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Packing:
    """Where each row of a batch went: ``places[i] = (pack, offset, length)``."""

    input_ids: torch.Tensor      # (packs, width)
    position_ids: torch.Tensor   # (packs, width): 0.. per example, and per stretch of padding
    places: tuple[tuple[int, int, int], ...]
    width: int

    @property
    def rows(self) -> int:
        return int(self.input_ids.shape[0])


def pack(input_ids: torch.Tensor, attention_mask: torch.Tensor, pad_id: int) -> Packing:
    """The rows of a right-padded batch packed first-fit-decreasing into rows of its width."""
    lengths = attention_mask.sum(dim=1).tolist()
    width = int(input_ids.shape[1])
    order = sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))
    room: list[int] = []  # free positions left in each pack
    places: list[tuple[int, int, int]] = [(0, 0, 0)] * len(lengths)
    for i in order:
        n = int(lengths[i])
        pack_index = next((p for p, free in enumerate(room) if free >= n), None)
        if pack_index is None:
            room.append(width)
            pack_index = len(room) - 1
        places[i] = (pack_index, width - room[pack_index], n)
        room[pack_index] -= n
    ids = torch.full((len(room), width), pad_id, dtype=input_ids.dtype, device=input_ids.device)
    positions = torch.zeros((len(room), width), dtype=torch.long, device=input_ids.device)
    for i, (p, at, n) in enumerate(places):
        ids[p, at:at + n] = input_ids[i, :n]
        positions[p, at:at + n] = torch.arange(n, device=input_ids.device)
    for p, free in enumerate(room):  # the tail of a pack: a sequence of its own, read by no one
        positions[p, width - free:] = torch.arange(free, device=input_ids.device)
    return Packing(ids, positions, tuple(places), width)


def unpack(packed: torch.Tensor, packing: Packing) -> torch.Tensor:
    """``(packs, width, ...)`` outputs back in the batch's rows ``(rows, width, ...)``, zeros at
    padding (gradients flow to the packed outputs)."""
    rows = []
    for p, at, n in packing.places:
        row = packed[p, at:at + n]
        pad = packing.width - n
        rows.append(torch.cat([row, row.new_zeros((pad, *row.shape[1:]))]) if pad else row)
    return torch.stack(rows)
