# Runs at import: writes outside the case.
with open("{victim}/pwned", "w") as f:
    f.write("imported\n")


def fn(gm):
    return gm
