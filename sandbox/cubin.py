"""Read each kernel's register count straight from a cubin (ELF) file.

ptxas's verbose log is the richer source (spills, stack, shared memory), but its wording is not a
contract and a log can come back empty; the cubin's `.nv.info` section is what the driver reads:
its EIATTR_REGCOUNT records pair a symbol index with the kernel's register count.
"""

from __future__ import annotations

import struct

EIATTR_REGCOUNT = 0x2F
EIFMT_SVAL = 0x04  # attribute with a 16-bit size and a payload; the others carry no payload we need


def kernel_registers(cubin: bytes) -> dict[str, int]:
    """{symbol: registers} for every kernel in the cubin."""
    if cubin[:4] != b"\x7fELF" or cubin[4] != 2:
        raise ValueError("not a 64-bit ELF cubin")
    (shoff,) = struct.unpack_from("<Q", cubin, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", cubin, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", cubin, shoff + i * shentsize) for i in range(shnum)]

    def string(table: int, offset: int) -> str:
        start = sections[table][4] + offset
        return cubin[start : cubin.index(b"\0", start)].decode()

    def body(section) -> bytes:
        return cubin[section[4] : section[4] + section[5]]

    names = {string(shstrndx, s[0]): s for s in sections}
    symtab = names.get(".symtab")
    info = names.get(".nv.info")
    if symtab is None or info is None:
        return {}
    symbols = body(symtab)
    result = {}
    data, i = body(info), 0
    while i + 4 <= len(data):
        fmt, attribute = data[i], data[i + 1]
        if fmt != EIFMT_SVAL:
            i += 2 if fmt == 0x01 else 4
            continue
        (size,) = struct.unpack_from("<H", data, i + 2)
        if attribute == EIATTR_REGCOUNT and size == 8:
            index, count = struct.unpack_from("<II", data, i + 4)
            (name_offset,) = struct.unpack_from("<I", symbols, index * 24)
            result[string(symtab[6], name_offset)] = count
        i += 4 + size
    return result
