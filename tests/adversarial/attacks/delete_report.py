"""Has a child process remove the folder the grading writes its report to (named on the command line).

The grading process itself refuses to touch that folder, but a child is outside its audit hooks.
Removing what the grading writes is the learner's doing: a failure, never the platform's error.
"""
import os
import subprocess
import sys


def double(x):
    report = sys.argv[sys.argv.index("--course-report") + 1]
    remove = f"import shutil; shutil.rmtree({os.path.dirname(report)!r})  # __TOKEN__"
    subprocess.run([sys.executable, "-I", "-c", remove], check=False)
    return 2 * x
