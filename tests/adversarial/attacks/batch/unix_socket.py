"""Connects to a pathname Unix socket of the instructor's (as tmux, an ssh agent or docker listen on)."""
import socket


def _attack():
    """What went out through the socket."""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(2)
            sock.connect("__UNIXSOCK__")
            sock.sendall(b"__TOKEN__")
            return ["a connection to the instructor's Unix socket"]
    except OSError:
        return []


def double(x):
    sent = _attack()
    if sent:
        raise RuntimeError("SENT " + " | ".join(sent))
    return 2 * x
