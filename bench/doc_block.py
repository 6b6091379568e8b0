"""What the benchmark scripts share: the machine they ran on, and their block of a document
(between `<!-- begin NAME -->` and `<!-- end NAME -->`, which run_benchmarks.py keeps)."""
import os
import pathlib
import re


def machine():
    """"AMD EPYC 7B13 (2 cores)": the CPU model and the cores this process may use."""
    model = "an unknown CPU"
    with open("/proc/cpuinfo") as cpuinfo:
        for line in cpuinfo:
            if line.startswith("model name"):
                model = line.partition(":")[2].strip()
                break
    return f"{model} ({len(os.sched_getaffinity(0))} cores)"


def write_block(path, name, text):
    """Replaces block NAME of the file at `path` with `text` (appends it when missing), or
    prints `text` when `path` is "-"."""
    print(text)
    if path == "-":
        return
    begin, end = f"<!-- begin {name} -->", f"<!-- end {name} -->"
    doc = pathlib.Path(path).read_text()
    block = f"{begin}\n{text}\n{end}"
    if begin in doc:
        doc = re.sub(re.escape(begin) + ".*?" + re.escape(end), lambda _: block, doc,
                     flags=re.S)
    else:
        doc = doc.rstrip() + "\n\n" + block + "\n"
    pathlib.Path(path).write_text(doc)
