"""How the DIMM slots are populated: per socket (from the locators, else the slot order) and per channel.

Pure. A board lists its slots in dmidecode type 17 records; the locator strings say which socket and channel
a slot belongs to on most boards (see probes.core.parsers.dmi.slot_place). When they don't, the slots are
split between the sockets in listing order (boards list socket 1's slots first).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from gpuaudit.probes.firmware.facts import Dimm

MAX_DIMMS_PER_CHANNEL = 2
"""DDR4/DDR5 server boards: at most 2 DIMMs per channel, so fewer DIMMs than half the slots leaves a channel empty."""


@dataclass(frozen=True)
class SocketPopulation:
    """One socket's DIMM slots: how many, how many populated, over how many channels."""

    label: str
    slots: int
    populated: int
    channels: int | None = None
    """Channels of this socket (None when the locators don't name them)."""
    populated_channels: int | None = None


@dataclass(frozen=True)
class Population:
    """How the DIMM slots are populated, per socket."""

    sockets: list[SocketPopulation]
    method: str
    """"locators" or "slot order" (how slots were tied to sockets)."""
    sizes_mb: list[int] = field(default_factory=list)

    @property
    def populated(self) -> int:
        return sum(s.populated for s in self.sockets)

    @property
    def slots(self) -> int:
        return sum(s.slots for s in self.sockets)


def _natural(label: str) -> tuple[int, str]:
    return (int(label), "") if label.isdigit() else (10**6, label)


def _group(dimms: Sequence[Dimm], sockets: int | None) -> tuple[dict[str, list[Dimm]], str]:
    labels = sorted({d.socket for d in dimms if d.socket is not None}, key=_natural)
    if (
        labels
        and all(d.socket is not None for d in dimms)
        and (sockets is None or len(labels) >= sockets)
    ):
        if sockets is not None and len(labels) > sockets:  # a 2-socket board with one CPU fitted
            used = [lb for lb in labels if any(d.size_mb and d.socket == lb for d in dimms)]
            labels = used if len(used) == sockets else labels
        return {lb: [d for d in dimms if d.socket == lb] for lb in labels}, "locators"
    n = sockets or 1
    if n > 1 and len(dimms) % n == 0:
        per = len(dimms) // n
        return {str(i + 1): list(dimms[i * per : (i + 1) * per]) for i in range(n)}, "slot order"
    return {"all": list(dimms)}, "slot order"


def population(dimms: Sequence[Dimm], sockets: int | None) -> Population:
    groups, method = _group(dimms, sockets)
    out = []
    for label, slots in groups.items():
        pop = [d for d in slots if d.size_mb]
        named = all(d.channel for d in slots)
        out.append(
            SocketPopulation(
                label=label,
                slots=len(slots),
                populated=len(pop),
                channels=len({d.channel for d in slots}) if named else None,
                populated_channels=len({d.channel for d in pop}) if named else None,
            )
        )
    sizes = sorted({d.size_mb for d in dimms if d.size_mb})
    return Population(sockets=out, method=method, sizes_mb=sizes)


def socket_name(label: str) -> str:
    return "all slots" if label == "all" else f"socket {label}"


def describe(p: Population) -> str:
    """ "3 of 18 slots populated (socket 1: 2/9 slots, 2/3 channels; socket 2: 1/9 slots, 1/3 channels); 4 GB DIMMs"."""
    per = "; ".join(
        f"{socket_name(s.label)}: {s.populated}/{s.slots} slots"
        + (f", {s.populated_channels}/{s.channels} channels" if s.channels is not None else "")
        for s in p.sockets
    )
    sizes = ", ".join(f"{m // 1024} GB" if m >= 1024 else f"{m} MB" for m in p.sizes_mb) or "no"
    guess = (
        "; sockets assumed from the slot order"
        if p.method == "slot order" and len(p.sockets) > 1
        else ""
    )
    return f"{p.populated} of {p.slots} slots populated ({per}); {sizes} DIMMs{guess}"


def defects(p: Population, sp5: bool) -> list[str]:
    """What is wrong with the population (empty list: every socket's channels evenly populated).

    Per-socket claims need sockets read from the locators; with sockets only assumed from the slot order the
    board is judged as a whole (a wrong split must not invent an empty socket).
    """
    out: list[str] = []
    if len(p.sizes_mb) > 1:
        out.append("mixed DIMM sizes")
    if p.method != "locators" and len(p.sockets) > 1:
        whole = SocketPopulation(label="all", slots=p.slots, populated=p.populated)
        return out + channel_defects(whole, sp5, len(p.sockets))
    counts = {s.populated for s in p.sockets}
    if len(p.sockets) > 1 and 0 in counts:
        out.append(
            "a socket has no memory: "
            + ", ".join(socket_name(s.label) for s in p.sockets if not s.populated)
        )
    elif len(counts) > 1:
        out.append(
            "sockets populated unevenly ("
            + " vs ".join(str(s.populated) for s in p.sockets)
            + " DIMMs)"
        )
    for s in p.sockets:
        if s.populated:
            out.extend(channel_defects(s, sp5, 1))
    return out


def channel_defects(s: SocketPopulation, sp5: bool, sockets: int) -> list[str]:
    """Empty channels of one socket (or of the whole board over `sockets` sockets)."""
    if s.channels is not None and s.populated_channels is not None:
        return (
            [f"{socket_name(s.label)}: {s.populated_channels} of {s.channels} channels populated"]
            if s.populated_channels < s.channels
            else []
        )
    if sp5 and s.slots >= 12 * sockets and s.populated < 12 * sockets:
        return [f"{socket_name(s.label)}: {s.populated} of {12 * sockets} SP5 channels populated"]
    if s.populated * MAX_DIMMS_PER_CHANNEL < s.slots:
        return [
            f"{socket_name(s.label)}: {s.populated} DIMM(s) in {s.slots} slots leave channels empty"
        ]
    return []
