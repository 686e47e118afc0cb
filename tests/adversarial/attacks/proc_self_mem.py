"""Opens /proc/self/mem to read and write the process's memory directly."""


def double(x):
    with open("/proc/self/mem", "r+b") as mem:
        mem.seek(id(x))
        mem.read(16)
    return 2 * x + 1
