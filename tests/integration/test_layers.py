"""scripts/check-layers, which every build runs: the tree's includes go only downward, and an
upward include (or a folder without a floor) fails it with the line that made it."""
import importlib.machinery
import pathlib
import re
import shutil
import subprocess
import types

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


def floors_of_the_script():
    loader = importlib.machinery.SourceFileLoader("check_layers", str(CHECK))
    module = types.ModuleType(loader.name)
    loader.exec_module(module)
    return module.FLOORS


def test_the_libraries_of_the_build_are_the_same_floors():
    """CMakeLists.txt builds a library per folder below the CLI, linking only (folders of) the
    floor below (so a call upward does not link), and each holds its own folder's files only."""
    text = (ROOT / "CMakeLists.txt").read_text()
    declared = {}
    for m in re.finditer(r"^footprint_floor\((\w+)((?: BELOW(?: (?!DEPS\b)\w+)+)?)(?: DEPS [^\n]*)?\n"
                         r"  SOURCES\n((?:  \S+\n)+)\)", text, re.M):
        below = m.group(2).split()[1:]
        sources = m.group(3).split()
        declared[m.group(1)] = (sorted(below), sources)
    floors = floors_of_the_script()
    below_cli = floors[:-1]
    # predict is built apart (only where ONNX and xgboost are), on its floor all the same
    declared["predict"] = (["report"], [])
    assert "footprint_predict_core PUBLIC footprint_layer_report " in text
    assert sorted(declared) == sorted(f for floor in below_cli for f in floor), declared.keys()
    for n, floor in enumerate(below_cli):
        for folder in floor:
            below, sources = declared[folder]
            # the floor just below, or what of it the folder uses (the rest comes through it)
            assert set(below) <= set(floors[n - 1] if n else []) and bool(below) == bool(n), \
                (folder, below)
            strays = [s for s in sources if not s.startswith(f"src/{folder}/") and "$" not in s]
            assert strays == [], (folder, strays)
