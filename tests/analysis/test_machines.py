"""Which kinds of machine a set of runs was made on (run.json's ``machine``)."""

import json

from tsr.analysis.machines import machine_kinds, machine_label, machines_note

HERE = {"cpu": "AMD EPYC", "cpu_capability": "AVX2", "torch": "2.13.0+cpu", "threads": 1}


def runs(tmp_path, *machines):
    paths = []
    for i, machine in enumerate(machines):
        path = tmp_path / f"run{i}"
        path.mkdir(parents=True)
        meta = {"fingerprint": "x", "seed": i} | ({"machine": machine} if machine is not None else {})
        (path / "run.json").write_text(json.dumps(meta))
        paths.append(path)
    return paths


def test_one_kind_of_machine_says_nothing(tmp_path):
    assert machines_note(runs(tmp_path, HERE, dict(HERE))) == ""
    assert machines_note([]) == ""


def test_each_kind_is_counted_and_a_run_without_a_record_is_its_own(tmp_path):
    intel = HERE | {"cpu": "Intel Xeon", "cpu_capability": "AVX512"}
    two_threads = HERE | {"threads": 2}
    paths = runs(tmp_path, HERE, intel, HERE, two_threads, None)
    kinds, unknown = machine_kinds(paths)
    assert unknown == 1 and kinds == {machine_label(HERE): 2, machine_label(intel): 1, machine_label(two_threads): 1}
    assert machine_label(intel) == "Intel Xeon (AVX512, torch 2.13.0+cpu, 1 thread(s))"
    note = machines_note(paths)
    assert note.startswith("made on 3 kinds of machine (") and "; 1 run(s) from before the record)" in note
    assert "AMD EPYC (AVX2, torch 2.13.0+cpu, 1 thread(s)): 2 run(s)" in note
    assert machine_label(HERE | {"gpu": "NVIDIA H100"}).endswith(", NVIDIA H100)")
    eager = HERE | {"compiled": False}
    assert machine_label(eager).endswith("1 thread(s), eager)")
    assert machine_label(HERE | {"compiled": True}) == machine_label(HERE)
    assert machines_note(runs(tmp_path / "eager", HERE | {"compiled": True}, eager)).startswith("made on 2 kinds")


def test_runs_that_all_predate_the_record_say_nothing(tmp_path):
    assert machines_note(runs(tmp_path, None, None)) == ""


def test_one_kind_beside_runs_without_a_record_says_the_pairs_are_unknown(tmp_path):
    note = machines_note(runs(tmp_path, HERE, None, HERE))
    assert note == ("1 run(s) did not record their machine (the others: AMD EPYC (AVX2, torch 2.13.0+cpu, "
                    "1 thread(s)): 2 run(s)): whether the runs of each seed shared one is not known")


def test_the_deterministic_flag_is_a_kind_of_machine_and_its_absence_means_off(tmp_path):
    on = HERE | {"deterministic": True}
    assert machine_label(on).endswith("1 thread(s), deterministic)")
    # a record from before the flag was recorded is one kind with a run that recorded it off
    assert machines_note(runs(tmp_path / "off", HERE, HERE | {"deterministic": False})) == ""
    assert machines_note(runs(tmp_path / "on", HERE, on)).startswith("made on 2 kinds")

