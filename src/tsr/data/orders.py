"""Task orders: canonical, reversed, seeded shuffles and explicit lists."""

from __future__ import annotations

from ..errors import ConfigError
from ..rng import numpy_rng
from .example import Stream

ORDER_WORDS = ("canonical", "reversed", "shuffle", "shuffle:<seed>")


def order_names(stream: Stream, order: str | list[str], seed: int = 0) -> list[str]:
    """Task names of ``stream`` in the requested order.

    ``canonical`` keeps the stream's own order, ``reversed`` reverses it, ``shuffle`` shuffles
    it with the run seed and ``shuffle:K`` with seed K (so an order can be held fixed across
    run seeds). A list names the tasks to run, in order, each at most once; naming only some
    of them runs a shorter stream.
    """
    names = stream.names
    if isinstance(order, list):
        unknown = [n for n in order if n not in names]
        if unknown:
            raise ConfigError(f"config key 'stream.order': unknown task {unknown[0]!r} "
                              f"(tasks: {', '.join(names)})")
        dupes = sorted({n for n in order if order.count(n) > 1})
        if dupes:
            raise ConfigError(f"config key 'stream.order': task {dupes[0]!r} is listed twice")
        return list(order)
    word = order.strip()
    if word == "canonical":
        return names
    if word == "reversed":
        return names[::-1]
    if word == "shuffle" or word.startswith("shuffle:"):
        shuffle_seed = seed
        if ":" in word:
            try:
                shuffle_seed = int(word.split(":", 1)[1])
            except ValueError:
                raise ConfigError(f"config key 'stream.order': {order!r} needs an integer seed "
                                  "after 'shuffle:'") from None
        perm = numpy_rng(shuffle_seed, "task-order", stream.name).permutation(len(names))
        return [names[i] for i in perm]
    raise ConfigError(f"config key 'stream.order': {order!r} is not valid (valid: "
                      f"{', '.join(ORDER_WORDS)}, or a list of task names)")


def apply_order(stream: Stream, order: str | list[str], seed: int = 0) -> Stream:
    return stream.subset(order_names(stream, order, seed))
