#!/usr/bin/env python3
"""Writes the PSF-licensed parts of Hearth's default calibration set from Debian packages:

  resources/calibration/docs_python.txt   Python 3.11 documentation sources (tutorial, some
                                          HOWTOs and FAQs; reStructuredText, unmodified)
  resources/calibration/code_python_more.txt  more Python 3.11 standard library modules

Run on Debian 12 (bookworm) with network access to the Debian archive:

  tools/make_calibration_docs.py [--out resources/calibration]

It downloads python3.11-doc and takes the library modules from the python3.11 installed here
(Debian's 3.11 package), so the output is reproducible for a given package version, which is
written into each file's header. Every file is PSF-licensed (PSF-LICENSE next to them).
"""
import argparse
import glob
import os
import subprocess
import sys
import tempfile

DOCS = [
    "tutorial/appetite", "tutorial/interpreter", "tutorial/introduction", "tutorial/controlflow",
    "tutorial/datastructures", "tutorial/modules", "tutorial/inputoutput", "tutorial/errors",
    "tutorial/classes", "tutorial/stdlib", "tutorial/stdlib2", "tutorial/venv",
    "tutorial/floatingpoint", "tutorial/appendix",
    "howto/functional", "howto/sorting", "howto/unicode", "howto/regex", "howto/descriptor",
    "faq/general", "faq/design", "faq/programming",
]
MODULES = ["functools", "fractions", "statistics", "dataclasses"]

HEADER = """{title}
Copyright (c) 2001-2023 Python Software Foundation; licensed under the PSF License Agreement
version 2 (resources/calibration/PSF-LICENSE). From Debian's {package} {version}, unmodified.

"""


def package_version(name):
    out = subprocess.run(["apt-cache", "policy", name], capture_output=True, text=True).stdout
    for line in out.splitlines():
        if "Candidate:" in line:
            return line.split()[-1]
    return "unknown"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "resources",
                                                  "calibration"))
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(["apt-get", "download", "python3.11-doc"], cwd=tmp, check=True)
        deb = glob.glob(os.path.join(tmp, "python3.11-doc_*.deb"))[0]
        subprocess.run(["dpkg-deb", "-x", deb, os.path.join(tmp, "x")], check=True)
        src = os.path.join(tmp, "x", "usr", "share", "doc", "python3.11", "html", "_sources")
        version = os.path.basename(deb).split("_")[1]
        parts = [HEADER.format(title="Python 3.11 documentation sources (tutorial, HOWTOs, FAQs).",
                               package="python3.11-doc", version=version)]
        for name in DOCS:
            with open(os.path.join(src, name + ".rst.txt"), encoding="utf-8") as f:
                parts.append(".. ---- file: Doc/%s.rst ----\n\n" % name + f.read().strip() + "\n\n")
        with open(os.path.join(a.out, "docs_python.txt"), "w", encoding="utf-8") as f:
            f.write("".join(parts))
    lib = "/usr/lib/python3.11"
    parts = [HEADER.format(title="# Python standard library modules (%s)." % ", ".join(MODULES),
                           package="python3.11", version=package_version("python3.11"))
             .replace("\nCopyright", "\n# Copyright").replace("\nversion 2", "\n# version 2")
             .replace("\n(", "\n# (")]
    for m in MODULES:
        with open(os.path.join(lib, m + ".py"), encoding="utf-8") as f:
            parts.append("# ---- file: Lib/%s.py ----\n" % m + f.read().strip() + "\n\n")
    with open(os.path.join(a.out, "code_python_more.txt"), "w", encoding="utf-8") as f:
        f.write("".join(parts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
