"""Two runs of one name started at once never move or overwrite each other's folder: the
process writing a run holds its folder's lock; another process is refused with a clear error,
while a run started again in the same process (a notebook cell run twice) moves the old aside."""

import subprocess
import sys

from labkit.runs.log import RunInUse, RunLog

OPEN = "from labkit.runs.log import RunLog\nRunLog({path!r}, {{'by': 'other'}})\nprint('opened')"


def other_process_opens(path) -> subprocess.CompletedProcess:
    code = OPEN.format(path=str(path))
    cmd = [sys.executable, "-c", code]
    return subprocess.run(cmd, check=False, capture_output=True, text=True)


def test_a_second_process_cannot_take_a_folder_being_written(tmp_path):
    path = tmp_path / "same"
    mine = RunLog(path, {"by": "me"})
    mine.log_step({"step": 1, "loss": 0.5})
    out = other_process_opens(path)
    assert out.returncode != 0 and "RunInUse" in out.stderr and "another run_name" in out.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["same"]  # not moved aside
    mine.log_step({"step": 2, "loss": 0.4})
    assert (path / "metrics.jsonl").read_text().count("\n") == 2  # still mine, whole
    mine.close()
    assert other_process_opens(path).stdout.endswith("opened\n")  # free once closed
    assert sorted(p.name for p in tmp_path.iterdir()) == ["same", "same.prev-1"]


def test_the_same_process_moves_its_earlier_run_aside(tmp_path):
    path = tmp_path / "cell"
    first = RunLog(path, {"try": 1})
    second = RunLog(path, {"try": 2})  # the cell run again, the first log still open
    assert (tmp_path / "cell.prev-1" / "config.json").exists()
    first.close()
    second.close()

    assert issubclass(RunInUse, RuntimeError)  # what a caller catches
