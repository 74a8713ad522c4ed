def fn(gm)
    return gm
