"""An honest solution that inspects its own frame, the stack and its own source, as a debugging learner would."""
import inspect
import sys


def double(x):
    frame = inspect.currentframe()
    assert frame is not None and frame.f_code.co_name == "double" and frame.f_locals["x"] == x
    assert sys._getframe().f_back is not None
    assert any(info.function == "double" for info in inspect.stack()[:3])
    assert "return 2 * x" in inspect.getsource(double)
    return 2 * x
