"""scripts/check-layers, which every build runs: the tree's includes go only downward, and an
upward include (or a folder without a floor) fails it with the line that made it."""
import pathlib
import shutil
import subprocess

ROOT = pathlib.Path(__file__).resolve().parents[2]
CHECK = ROOT / "scripts" / "check-layers"


def check(root):
    return subprocess.run([CHECK, "--root", root], capture_output=True, text=True)


def test_the_tree_includes_only_downward():
    proc = check(ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def copy_of_the_tree(tmp_path):
    shutil.copytree(ROOT / "src", tmp_path / "src")
    shutil.copytree(ROOT / "include", tmp_path / "include")
    return tmp_path


def test_an_upward_include_fails_with_its_line(tmp_path):
    root = copy_of_the_tree(tmp_path)
    strings = root / "src" / "util" / "strings.h"
    lines = strings.read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("#include \"")) + 1
    lines.insert(at, '#include "run/monitor_internal.h"')
    strings.write_text("\n".join(lines) + "\n")
    proc = check(root)
    assert proc.returncode == 1
    assert proc.stdout.splitlines() == [
        f"{strings.relative_to(root)}:{at + 1}: util (floor 0) includes run/monitor_internal.h "
        "(run, floor 6)"], proc.stdout
    assert "1 upward include(s)" in proc.stderr


def test_a_public_header_counts_as_its_folders(tmp_path):
    root = copy_of_the_tree(tmp_path)
    probe = root / "src" / "probe" / "probe.h"
    probe.write_text(probe.read_text().replace('#include "footprint/metrics.h"',
                                               '#include "footprint/report.h"', 1))
    proc = check(root)
    assert proc.returncode == 1 and "probe (floor 2) includes footprint/report.h (report" \
        in proc.stdout, proc.stdout


def test_a_folder_without_a_floor_is_named(tmp_path):
    root = copy_of_the_tree(tmp_path)
    (root / "src" / "attic").mkdir()
    (root / "src" / "attic" / "old.cc").write_text('#include "util/strings.h"\n')
    proc = check(root)
    assert proc.returncode == 1 and "its folder 'attic' has no floor" in proc.stdout, proc.stdout
