"""`--share`: identifiers mapped consistently to placeholders, so an audit can be posted in a ticket or a forum.

What is mapped (the same original is the same placeholder everywhere in one document, `sos clean` style):

* hostnames (the targets' own, `uname -n`, the SSH specs; an FQDN of a known host maps with it) -> `host-1`
* IPv4 -> 192.0.2.N / 198.51.100.N / 203.0.113.N, IPv6 -> 2001:db8::N (documentation ranges: parsers
  still read them); loopback, 0.0.0.0 and netmasks are kept
* MAC addresses (and longer colon-hex hardware addresses) -> 02:00:00:00:00:NN (locally administered)
* UUIDs (GPU-/MIG- UUIDs, the system UUID, ...) -> 00000000-0000-4000-8000-00000000000N, prefix kept
* the machine-id (`machine_id`: /etc/machine-id, 32 hex digits) -> 0000...000N (32 hex digits)
* serial numbers and asset tags (from `Serial Number:`, `SerialNumber`, `<serial>`, a `serial` CSV column,
  InfiniBand GUIDs) -> `serial-N` / 0x000000000000000N
* user names (user@ in specs, /home/NAME, /Users/NAME, `uid=N(NAME)`) -> `user-N`; `root` and system accounts
  are kept (they say how the tool ran, not who)

Version strings that look like IPv4 (`nvidia-cublas-cu12==12.8.4.1`, `FirmwareVersion: 7.2.2.0`) are kept: a
version after `==`, a letter, or on a line about a version/firmware/revision is not an address.

`Sharer` first learns every identifier of a document (all strings, keys included), then replaces; the mapping
(original -> placeholder) is what the user keeps locally (`write_mapping`, 0600) and never shares.
No Textual, no rich.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

from gpuaudit.probes.core.sources import SOURCES
from gpuaudit.snapshots.compact import records_of

KINDS = ("host", "ip", "mac", "uuid", "serial", "guid", "user", "machine-id")
SYSTEM_USERS = frozenset(
    "root nobody daemon bin sys sync games man lp mail news uucp proxy www-data backup list irc gnats "
    "systemd-network systemd-resolve messagebus sshd _apt nvidia-persistenced".split()
)
NOT_A_NAME = frozenset({"", "localhost", "local", "localhost.localdomain", "(none)", "none"})
NOT_A_SERIAL = frozenset(
    s.lower()
    for s in (
        "--",
        "n/a",
        "[n/a]",
        "na",
        "not specified",
        "to be filled by o.e.m.",
        "default string",
        "none",
        "null",
        "unknown",
        "not applicable",
        "not available",
        "unspecified",
        "empty",
        "system serial number",
        "chassis serial number",
        "base board serial number",
        "0123456789",
        "123456789",
        "...",
    )
)

TRADE_WORDS = frozenset(
    "sglang vllm tgi ollama triton trtllm tensorrt python gpu gpus node server host container master worker "
    "ubuntu debian proxmox pve nvidia cuda test dev prod admin compute inference llm model".split()
)

_UUID = re.compile(
    r"(?i)(?<![0-9a-z])((?:GPU-|MIG-)?)([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})"
    r"(?![0-9a-z])"
)
_MAC = re.compile(
    r"(?<![0-9A-Fa-f:-])(?:[0-9A-Fa-f]{2}([:-]))(?:[0-9A-Fa-f]{2}\1){4,18}[0-9A-Fa-f]{2}(?![0-9A-Fa-f:-])"
)
_IPV6 = re.compile(r"(?<![0-9A-Za-z:.])(?:[0-9A-Fa-f]{0,4}:){2,7}[0-9A-Fa-f]{0,4}(?![0-9A-Za-z:])")
_IPV4 = re.compile(r"(?<![0-9.])(?:\d{1,3}\.){3}\d{1,3}(?![0-9]|\.\d)")
_VERSION_BEFORE = re.compile(r"(?:[A-Za-z_]|[=~<>!]=|\bv)$")
_VERSION_LINE = re.compile(r"(?i)version|firmware|bundle|registry|revision|release|\brev\b|build")
_SERIAL_KV = re.compile(
    r"(?im)(?:serial[ _-]?(?:number|no\.?|num)?|asset[ _-]?tag|board serial|product serial|chassis serial)"
    r"[\"']?\s*(?:[:=]|</?\w*>)\s*[\"']?([^\"'\n,<>{}\\]+)"
)
_SERIAL_XML = re.compile(r"(?i)<serial>([^<]+)</serial>")
_GUID = re.compile(
    r"(?i)\b(?:node|port|system image|sys_image)[ _]guid\s*[:=]?\s*(0x[0-9a-f]{8,16})\b"
)
_HOME = re.compile(
    r"(?<![\w.-])/(home|Users)/([A-Za-z0-9_][A-Za-z0-9_.-]{0,31})(?=[/\s\"':,)\]]|$)"
)
_UID = re.compile(r"\buid=\d+\(([A-Za-z0-9_][A-Za-z0-9_.-]{0,31})\)")
_SPEC_USER = re.compile(r"^([A-Za-z0-9_][A-Za-z0-9_.-]{0,31})@")
_V6_GLOBAL = ipaddress.IPv6Network("2000::/3")
_NETMASK_OCTETS = frozenset({0, 128, 192, 224, 240, 248, 252, 254, 255})


class Sharer:
    """Learns identifiers from documents and texts, then maps them to stable placeholders."""

    def __init__(self) -> None:
        self.maps: dict[str, dict[str, str]] = {k: {} for k in KINDS}
        self._placeholders: set[str] = set()
        self._literal_re: re.Pattern[str] | None = None
        self._lookup: dict[str, str] = {}

    # --- learning --------------------------------------------------------------------------------------
    def learn_snapshot(self, doc: dict[str, Any]) -> None:
        """Structured identifiers first (targets, states, `uname -n`), then every string of the document."""
        for target in doc.get("targets", []):
            self._learn_spec(str(target.get("spec", "")), str(target.get("kind", "")))
        for state in doc.get("target_states", {}).values():
            self.add("host", state.get("hostname"))
        for rec in records_of(doc):  # the stored shape (each record once) or an expanded one
            if rec.get("command_id") == "uname_n":
                self.add("host", (rec.get("stdout") or "").strip().splitlines()[0:1])
            elif rec.get("command_id") == "machine_id":
                # 32 hex digits: no pattern finds it elsewhere, so it is learned from its record
                self.add(
                    "machine-id", [ln for ln in (rec.get("stdout") or "").split() if len(ln) >= 16]
                )
        for text in _strings(doc):
            self.learn_text(text)

    def learn_fleet(self, doc: dict[str, Any]) -> None:
        """A `--hosts --json` document: each entry's target and name, then its snapshot."""
        for entry in doc.get("fleet", []):
            self._learn_spec(str(entry.get("target", "")), "ssh")
            self.add("host", entry.get("name"))
            if isinstance(entry.get("snapshot"), dict):
                self.learn_snapshot(entry["snapshot"])
        for text in _strings(doc):
            self.learn_text(text)

    def _learn_spec(self, spec: str, kind: str) -> None:
        if kind in ("local", "pct", "replay", "directory") or not spec:
            return
        if m := _SPEC_USER.match(spec):
            self.add("user", m.group(1))
        host = spec.rpartition("@")[2]
        if kind in ("lxc", "docker"):
            return  # a container name, not a machine's
        host = host[1:].partition("]")[0] if host.startswith("[") else host.rsplit(":", 1)[0]
        if not _is_ip(host):
            self.add("host", host)

    def learn_text(self, text: str) -> None:
        """Pattern-found identifiers of one text (raw outputs, facts, findings)."""
        if not text or len(text) < 4:
            return
        for m in _SERIAL_KV.finditer(text):
            self.add("serial", m.group(1))
        for m in _SERIAL_XML.finditer(text):
            self.add("serial", m.group(1))
        for m in _GUID.finditer(text):
            self.add("guid", m.group(1).lower())
        for m in _HOME.finditer(text):
            self.add("user", m.group(2))
        for m in _UID.finditer(text):
            self.add("user", m.group(1))
        self._learn_serial_columns(text)

    def _learn_serial_columns(self, text: str) -> None:
        """`nvidia-smi --query-gpu=index,serial,uuid --format=csv`: the header names the serial column."""
        lines = text.splitlines()
        if not lines or "serial" not in lines[0].lower() or "," not in lines[0]:
            return
        header = [h.strip().lower() for h in lines[0].split(",")]
        cols = [i for i, h in enumerate(header) if h.startswith("serial")]
        for line in lines[1:]:
            cells = [c.strip() for c in line.split(",")]
            for i in cols:
                if i < len(cells):
                    self.add("serial", cells[i])

    def add(self, kind: str, value: object) -> None:
        if isinstance(value, list):
            for v in value:
                self.add(kind, v)
            return
        if not isinstance(value, str):
            return
        value = value.strip().strip(".")
        if kind == "host":
            if value.lower() in NOT_A_NAME or len(value) < 2 or _is_ip(value):
                return
            value = value.split(".")[0] if not value.replace(".", "").isdigit() else value
        elif kind == "user" and (value in SYSTEM_USERS or len(value) < 2):
            return
        elif kind == "serial" and not _looks_serial(value):
            return
        if value in self.maps[kind] or value in self._placeholders:
            return
        placeholder = _placeholder(kind, len(self.maps[kind]) + 1, value)
        self.maps[kind][value] = placeholder
        self._placeholders.add(placeholder)
        self._literal_re = None

    # --- replacing -------------------------------------------------------------------------------------
    def text(self, text: str) -> str:
        """Every identifier of `text` replaced (learned ones, and pattern-found addresses and UUIDs)."""
        if not text:
            return text
        if (whole := self.maps["host"].get(text.strip())) is not None:
            return text.replace(text.strip(), whole)  # a hostname field, `uname -n`'s output
        text = _UUID.sub(self._uuid, text)
        text = _MAC.sub(self._mac, text)
        text = _IPV6.sub(self._ipv6, text)
        text = _IPV4.sub(self._ipv4, text)
        if (literal := self._literals()) is not None:
            text = literal.sub(self._literal, text)
        return text

    def document(self, obj: Any) -> Any:
        """A JSON-like value with every string (keys too) passed through `text`."""
        if isinstance(obj, str):
            return self.text(obj)
        if isinstance(obj, dict):
            return {self.text(k): self.document(v) for k, v in obj.items()}
        if isinstance(obj, list):
            return [self.document(v) for v in obj]
        return obj

    def _map(self, kind: str, value: str) -> str:
        if value in self._placeholders:
            return value
        key = value.lower() if kind in ("mac", "uuid", "guid") else value
        if key not in self.maps[kind]:
            same = [k for k in self.maps[kind] if kind != "ip" or (":" in k) == (":" in value)]
            placeholder = _placeholder(kind, len(same) + 1, value)
            self.maps[kind][key] = placeholder
            self._placeholders.add(placeholder)
        return self.maps[kind][key]

    def _uuid(self, m: re.Match[str]) -> str:
        prefix, value = m.group(1), m.group(2)
        if set(value.replace("-", "")) == {"0"}:
            return m.group(0)
        return prefix + self._map("uuid", value)

    def _mac(self, m: re.Match[str]) -> str:
        s = m.group(0)
        if set(s.lower()) - set(":-") <= {"0"} or set(s.lower()) - set(":-") == {"f"}:
            return s  # all-zero or broadcast: no machine's
        return self._map("mac", s)

    def _ipv6(self, m: re.Match[str]) -> str:
        s = m.group(0)
        if "::" not in s and s.count(":") != 7:
            return s
        try:
            addr = ipaddress.IPv6Address(s)
        except ValueError:
            return s
        routable = addr in _V6_GLOBAL or addr.is_private or addr.is_link_local
        if not routable or addr.is_loopback or addr.is_unspecified or s in self._placeholders:
            return s  # `10de::0680` is a PCI id pair, not an address
        return self._map("ip", s.lower())

    def _ipv4(self, m: re.Match[str]) -> str:
        s = m.group(0)
        octets = [int(x) for x in s.split(".")]
        if max(octets) > 255 or s in self._placeholders:
            return s
        if octets[0] in (0, 127) or octets[0] == 255 or _is_netmask(octets):
            return s
        line_start = m.string.rfind("\n", 0, m.start()) + 1
        before = m.string[line_start : m.start()]
        after = m.string[m.end() : m.end() + 1]
        if _VERSION_BEFORE.search(before) or (after and after.isalpha()):
            return s
        if _VERSION_LINE.search(before) and not re.search(r"(?i)addr|ip|host|gw|server", before):
            return s
        return self._map("ip", s)

    def _literals(self) -> re.Pattern[str] | None:
        """Learned serials, GUIDs and user names (case-sensitive) and hostnames with any domain (not)."""
        if self._literal_re is None:
            exact = [
                *self.maps["serial"],
                *self.maps["guid"],
                *self.maps["user"],
                *self.maps["machine-id"],
            ]
            vocabulary = _vocabulary()
            hosts = [h for h in self.maps["host"] if h.lower() not in vocabulary]
            words = [h for h in self.maps["host"] if h.lower() in vocabulary]
            if not exact and not hosts:
                return None
            parts = [re.escape(v) for v in sorted(exact, key=len, reverse=True)]
            # a long serial inside a longer token (`[VU] Vendor specific: MT2304XZ02VDMLNX...`) goes too
            long_serials = [v for v in self.maps["serial"] if len(v) >= 8]
            parts += [
                "(?i:" + re.escape(h) + r"(?:\.[A-Za-z0-9-]+)*)"
                for h in sorted(hosts, key=len, reverse=True)
            ]
            # a hostname that is also a word of the trade (`sglang`, `gpu`) only where it names a host
            parts += [
                "(?i:(?:(?<=hostname: )|(?<=hostname=)|(?<=hostname )|(?<=@)|(?<=\\d\\d:\\d\\d:\\d\\d ))"
                + re.escape(w)
                + ")"
                for w in words
            ]
            bounded = r"(?<![A-Za-z0-9_])(?:" + "|".join(parts) + r")(?![A-Za-z0-9_])"
            free = "|".join(re.escape(v) for v in sorted(long_serials, key=len, reverse=True))
            self._literal_re = re.compile(f"{free}|{bounded}" if free else bounded)
            self._lookup = {
                o: p
                for k in ("serial", "guid", "user", "machine-id")
                for o, p in self.maps[k].items()
            }
            self._lookup.update({h.lower(): p for h, p in self.maps["host"].items()})
        return self._literal_re

    def _literal(self, m: re.Match[str]) -> str:
        s = m.group(0)
        if s in self._placeholders:
            return s
        return self._lookup.get(s) or self._lookup.get(s.split(".")[0].lower(), s)

    # --- the mapping the user keeps ------------------------------------------------------------------
    def mapping(self) -> dict[str, Any]:
        return {
            "note": "gpuaudit-tui --share: original -> placeholder. Keep this file; do not share it.",
            "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
            **{
                kind: dict(sorted(m.items(), key=lambda kv: kv[1])) for kind, m in self.maps.items()
            },
        }

    def originals(self) -> list[str]:
        return [o for m in self.maps.values() for o in m]


def share_snapshot_dict(
    doc: dict[str, Any], sharer: Sharer | None = None
) -> tuple[dict[str, Any], Sharer]:
    """A snapshot (as plain JSON data) with every identifier mapped; the Sharer holds the mapping."""
    sharer = sharer or Sharer()
    sharer.learn_snapshot(doc)
    return sharer.document(doc), sharer


def share_texts(texts: Iterable[str], sharer: Sharer | None = None) -> tuple[list[str], Sharer]:
    """Free texts (plan Markdown, raw fixture files): learn from all, then replace in each."""
    sharer = sharer or Sharer()
    texts = list(texts)
    for t in texts:
        sharer.learn_text(t)
    return [sharer.text(t) for t in texts], sharer


def default_mapping_path() -> Path:
    import platformdirs

    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    return platformdirs.user_data_path("gpuaudit-tui") / "share-maps" / f"share-map-{stamp}.json"


def write_mapping(sharer: Sharer, path: Path) -> Path:
    """The mapping as JSON, 0600, in a folder created 0700: it holds every original identifier."""
    path = Path(path).expanduser()
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        os.fchmod(fh.fileno(), 0o600)
        json.dump(sharer.mapping(), fh, indent=1, ensure_ascii=False)
        fh.write("\n")
    return path


# --- helpers ---------------------------------------------------------------------------------------------


def _strings(obj: Any) -> Iterable[str]:
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield str(k)
            yield from _strings(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _strings(v)


@cache
def _vocabulary() -> frozenset[str]:
    """Words of the tool's own command lines and of the trade: a hostname equal to one is replaced only where
    it names a host, or `sglang` the engine would become `host-2` the engine."""

    words = {
        w.lower()
        for src in SOURCES.values()
        for w in re.findall(r"[A-Za-z][A-Za-z0-9_-]+", src.shell)
    }
    return frozenset(words | TRADE_WORDS)


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text.strip("[]"))
    except ValueError:
        return False
    return True


def _is_netmask(octets: list[int]) -> bool:
    return (
        octets[0] == 255
        and all(o in _NETMASK_OCTETS for o in octets)
        and octets == sorted(octets, reverse=True)
    )


def _looks_serial(value: str) -> bool:
    v = value.strip()
    if v.lower() in NOT_A_SERIAL or len(v) < 4 or len(v) > 64 or len(set(v)) <= 2:
        return False
    if re.fullmatch(r"[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]", v):
        return False  # a PCI address some BMCs put in the field
    return any(c.isdigit() for c in v) and " " not in v.strip()


_PLACEHOLDERS: dict[str, Callable[[int, str], str]] = {
    "host": lambda n, _: f"host-{n}",
    "user": lambda n, _: f"user-{n}",
    "serial": lambda n, _: f"serial-{n}",
    "guid": lambda n, _: f"0x{n:016x}",
    "uuid": lambda n, _: f"00000000-0000-4000-8000-{n:012d}",
    "machine-id": lambda n, _: f"{n:032x}",
    "mac": lambda n, v: _mac_placeholder(n, v),
}


def _mac_placeholder(n: int, value: str) -> str:
    sep = value[2]
    groups = len(value.split(sep))
    return sep.join(["02", *(["00"] * (groups - 3)), f"{n // 256 % 256:02x}", f"{n % 256:02x}"])


def _placeholder(kind: str, n: int, value: str) -> str:
    if kind == "ip":
        if ":" in value:
            return f"2001:db8::{n:x}"
        nets = ("192.0.2", "198.51.100", "203.0.113")
        return (
            f"{nets[(n - 1) // 254 % 3]}.{(n - 1) % 254 + 1}"
            if n <= 762
            else f"10.255.{n // 256}.{n % 256}"
        )
    return _PLACEHOLDERS[kind](n, value)
