import os
import time


def _daemon():
    """A classic daemon: fork, setsid, fork again; the grandchild records its pid in
    daemon.pid, tells the pass it did, and sleeps. The pass returns only after that, so
    the daemon is running when the pass's case ends."""
    ready_read, ready_write = os.pipe()
    child = os.fork()
    if child:
        os.close(ready_write)
        os.read(ready_read, 1)  # the grandchild wrote its pid (or died)
        os.close(ready_read)
        os.waitpid(child, 0)
        return
    os.setsid()
    if os.fork():
        os._exit(0)
    with open("{scratch}/daemon.pid", "a") as f:
        f.write(f"{os.getpid()}\n")
    os.write(ready_write, b"x")
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.closerange(3, 4096)
    time.sleep(1000)
    os._exit(0)


def fn(gm):
    _daemon()
    return gm
