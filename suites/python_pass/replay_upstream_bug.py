"""Replays a repro file of a bug found in one of PyTorch's own passes (upstream_bugs/):
`passcheck repro FILE` must still fail (exit 1, verdict FAILS) with the failure the file
records. Usage: replay_upstream_bug.py PASSCHECK_BINARY FILE.REPRO. When PyTorch fixes the
bug the replay passes and this test fails: move the file to suites/regressions then."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import support  # noqa: E402


def main():
    path = sys.argv[2]
    recorded = [l[len("#! message: "):] for l in open(path) if l.startswith("#! message: ")]
    assert recorded, path + " records no failure message"
    code, out = support.run(["repro", "--allow-python", path], expect=1)
    assert "verdict: FAILS" in out, out
    # The same kind of failure as recorded: what follows the pass's name ("python{pass=M:F}
    # changed numerics: ...") up to its details.
    kind = recorded[0].split("} ", 1)[-1].split(":")[0]
    assert kind in out, (kind, out)
    print("%s: still fails: %s" % (os.path.basename(path), kind))


if __name__ == "__main__":
    main()
