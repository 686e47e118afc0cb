"""Opens sockets: TCP and UDP to a listener on the machine, and TCP to a public address."""
import socket


def _attack():
    """Every connection or datagram that went out."""
    sent = []
    try:
        with socket.create_connection(("127.0.0.1", __PORT__), timeout=2) as conn:
            conn.sendall(b"__TOKEN__")
            sent.append("tcp to the listener")
    except OSError:
        pass
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
            udp.sendto(b"__TOKEN__", ("127.0.0.1", __PORT__))
            sent.append("udp to the listener")
    except OSError:
        pass
    try:
        with socket.create_connection(("192.0.2.1", 80), timeout=1):  # TEST-NET-1: never routed anywhere
            sent.append("tcp to a public address")
    except OSError:
        pass
    return sent


def double(x):
    sent = _attack()
    if sent:
        raise RuntimeError("SENT " + " | ".join(sent))
    return 2 * x
