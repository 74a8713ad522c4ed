import time

time.sleep(1000)


def fn(gm):
    return gm
