"""An honest solution that does its work in a thread pool and a plain thread, and waits for both."""
import threading
from concurrent.futures import ThreadPoolExecutor


def double(x):
    out = {}
    worker = threading.Thread(target=lambda: out.setdefault("t", x + x))
    worker.start()
    worker.join()
    with ThreadPoolExecutor(max_workers=2) as pool:
        result = pool.submit(lambda v: 2 * v, x).result()
    assert out["t"] == result
    return result
