"""What a program that may mark regions is offered before it starts: the handshake's listening
socket and the region table's file.

Made with the C modules alone (``_socket``, not :mod:`socket`, whose enums take 5 ms to import):
``sectormon stat``'s quick start offers both to every command it runs, before it can know whether
the program marks, and takes the server (:mod:`.server`) and the reader (:mod:`.table`) in only
when a thread asks (sectormon.commands.stat_quick_regions). The engine makes them here too.
"""

from __future__ import annotations

import os

from sectormon.regions import layout


def library_built() -> bool:
    """Whether the marker library was built at install (else no program can have linked it from
    this install, and there is nothing to offer)."""
    folder = os.path.dirname(os.path.abspath(__file__))
    return os.path.isfile(os.path.join(folder, "lib", f"lib{layout.LIBRARY_NAME}.so"))


def listen() -> tuple[int, str]:
    """A new listening socket with a random abstract name: its descriptor and ``@name``."""
    import _socket

    # os.urandom is what secrets.token_hex reads; the secrets module would import hashlib.
    name = f"@sectormon-markers-{os.getpid()}-{os.urandom(8).hex()}"
    listener = _socket.socket(_socket.AF_UNIX, _socket.SOCK_SEQPACKET | _socket.SOCK_CLOEXEC)
    try:
        listener.bind("\0" + name[1:])
        listener.listen(64)
    except OSError:
        listener.close()
        raise
    return listener.detach(), name


def create_table_file(max_threads: int, max_slots: int) -> int:
    """A new table: an anonymous shared-memory file (``memfd``, close-on-exec) of the bounds' size
    with its header written; its descriptor."""
    size = layout.table_bytes(max_threads, max_slots)
    fd = os.memfd_create("sectormon-regions", os.MFD_CLOEXEC)
    try:
        os.ftruncate(fd, size)
        header = layout.HEADER.pack(
            layout.MAGIC,
            layout.VERSION,
            layout.HEADER_BYTES,
            layout.THREAD.size,
            layout.SLOT_BYTES,
            max_threads,
            max_slots,
            layout.MAX_GROUPS,
            layout.MAX_EVENTS,
            0,
            0,
            0,
            0,
            0,
            0,
        )
        os.pwrite(fd, header, 0)
    except BaseException:
        os.close(fd)
        raise
    return fd
