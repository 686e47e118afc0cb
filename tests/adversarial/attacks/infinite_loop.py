"""Never returns."""


def double(x):
    while True:
        pass
