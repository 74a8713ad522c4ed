"""One temporary root per test process, shared by the Python suites (torchtitan,
python_pass): importing this module puts every temporary directory the process makes (its
own mkdtemp calls and the library's work directories) under a root that is removed when
the process exits, so a suite leaves nothing in /tmp; PASSCHECK_KEEP_TEST_DIRS=1 keeps it.
Only the process that made the root removes it: a forked child that exits does not."""
import atexit
import os
import shutil
import tempfile

ROOT = tempfile.mkdtemp(prefix="passcheck-suite-")
tempfile.tempdir = ROOT
_OWNER = os.getpid()


@atexit.register
def _remove():
    if os.getpid() == _OWNER and not os.environ.get("PASSCHECK_KEEP_TEST_DIRS"):
        shutil.rmtree(ROOT, ignore_errors=True)
