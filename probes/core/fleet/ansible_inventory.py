"""`--hosts FILE` where FILE is what Ansible itself resolved: the JSON of `ansible-inventory -i SOURCE --list`.

Ranges (`gpu[01:20]`), YAML inventories, `group_vars/` and `host_vars/` directories, inventory plugins and vaults
are Ansible's job: `ansible-inventory -i SOURCE --list > hosts.json` resolves them, and this reads the result.
`--list` puts every variable, resolved per host, in `_meta.hostvars`; the `--export` form (group `vars` kept in
the groups) is read too, group variables applied from the shallowest group to the deepest, host vars last.

Per host the SSH variables Ansible honours are used (`ansible_host`/`ansible_ssh_host`,
`ansible_port`/`ansible_ssh_port`, `ansible_user`/`ansible_ssh_user`,
`ansible_private_key_file`/`ansible_ssh_private_key_file`); other `ansible_*` variables are named as ignored.
A vault-encrypted SSH variable (`{"__ansible_vault": ...}`) is refused: decrypt it with `ansible-inventory`
(`--vault-password-file`).

`load_any_inventory(path)` is what `--hosts` calls: JSON when the file starts with `{`, else the native reader
(probes/core/fleet/inventory.py) for plain lists and Ansible INI, which refuses what it does not read the way
ansible-core does (host ranges, YAML, `group_vars/`/`host_vars/` beside the file) with one line naming this path.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

from gpuaudit.probes.core.collect.targets import parse_ssh_address
from gpuaudit.probes.core.errors import UsageError
from gpuaudit.probes.core.fleet.inventory import (
    HONOURED,
    HOST_VARS,
    KEY_VARS,
    MAX_HOSTS,
    PORT_VARS,
    USER_VARS,
    FleetHost,
    Inventory,
    read_inventory,
    read_inventory_file,
)

JSON_HINT = (
    "resolve it with `ansible-inventory -i FILE --list > hosts.json` and pass --hosts hosts.json"
)
_SPECIAL = frozenset({"_meta", "all", "ungrouped"})


def _scalar(value: Any, name: str, host: str, source: str) -> str | None:
    if value is None or value == "":
        return None
    if isinstance(value, Mapping) and "__ansible_vault" in value:
        raise UsageError(
            f"{source}: host {host}: {name} is vault-encrypted; run ansible-inventory with "
            "--vault-password-file (or --ask-vault-pass) so the JSON holds the value"
        )
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise UsageError(f"{source}: host {host}: {name} is not a string or number: {value!r}")
    return str(value)


def _pick(
    hostvars: Mapping[str, Any], names: tuple[str, ...], host: str, source: str
) -> str | None:
    for n in names:
        if (v := _scalar(hostvars.get(n), n, host, source)) is not None:
            return v
    return None


def _join(address: str, user: str | None, port: str | None) -> str:
    host = f"[{address}]" if ":" in address and not address.startswith("[") else address
    return f"{user + '@' if user else ''}{host}{':' + port if port else ''}"


def read_ansible_json(text: str, source: str = "inventory") -> Inventory:
    """The hosts of `ansible-inventory --list` (or `--export`) JSON, in Ansible's group order; UsageError if not."""
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise UsageError(f"{source}: not valid JSON ({exc})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("all", {}), dict):
        raise UsageError(f"{source}: not the JSON of `ansible-inventory --list`")
    groups: dict[str, dict[str, Any]] = {
        k: v for k, v in doc.items() if k != "_meta" and isinstance(v, dict)
    }
    meta = doc.get("_meta")
    meta = meta if isinstance(meta, dict) else {}
    hostvars_all = meta.get("hostvars")
    hostvars_all = hostvars_all if isinstance(hostvars_all, dict) else {}

    order: list[str] = []
    member: dict[str, list[str]] = {}
    parents: dict[str, list[str]] = {}
    seen_groups: set[str] = set()

    def walk(group: str) -> None:  # depth first from `all`, as ansible-inventory lists them
        if group in seen_groups:
            return
        seen_groups.add(group)
        body = groups.get(group) or {}
        for h in body.get("hosts") or []:
            h = str(h)
            if h not in member:
                order.append(h)
                member[h] = []
            if group not in _SPECIAL:
                member[h].append(group)
        for child in body.get("children") or []:
            parents.setdefault(str(child), []).append(group)
            walk(str(child))

    walk("all")
    for g in groups:  # groups not reachable from `all` (hand-written JSON)
        walk(g)
    for h in hostvars_all:
        if h not in member:
            order.append(h)
            member[h] = []
    if len(order) > MAX_HOSTS:
        raise UsageError(f"{source}: more than {MAX_HOSTS} hosts in one inventory; split it")

    def depth(g: str, stack: frozenset[str] = frozenset()) -> int:
        ups = [depth(p, stack | {g}) for p in parents.get(g, []) if p not in stack]
        return 1 + max(ups, default=0)

    def ancestry(gs: list[str]) -> list[str]:
        found: list[str] = []
        todo = list(gs)
        while todo:
            g = todo.pop()
            if g not in found:
                found.append(g)
                todo += parents.get(g, [])
        return sorted(found, key=lambda g: (g != "all", depth(g), g))

    hosts: list[FleetHost] = []
    seen: set[str] = set()
    used: set[str] = set()
    for name in order:
        hv: dict[str, Any] = {}
        for g in ancestry(member[name] + ["all"]):  # --export: group vars, shallow to deep
            gv = (groups.get(g) or {}).get("vars")
            if isinstance(gv, dict):
                hv.update(gv)
        own = hostvars_all.get(name)
        if isinstance(own, dict):
            hv.update(own)
        used.update(k for k in hv if isinstance(k, str))
        address = _pick(hv, HOST_VARS, name, source) or name
        spec = _join(
            address, _pick(hv, USER_VARS, name, source), _pick(hv, PORT_VARS, name, source)
        )
        try:
            parse_ssh_address(spec)
        except UsageError as exc:
            raise UsageError(f"{source}: host {name}: {exc}") from None
        if spec in seen:
            continue
        seen.add(spec)
        extra: dict[str, Any] = {}
        bmc = _pick(hv, ("gpuaudit_bmc",), name, source)
        if bmc is not None and "bmc" in getattr(FleetHost, "__dataclass_fields__", {}):
            extra["bmc"] = bmc
        hosts.append(
            FleetHost(
                spec=spec,
                name=name,
                groups=tuple(dict.fromkeys(member[name])),
                identity=_pick(hv, KEY_VARS, name, source),
                **extra,
            )
        )
    ignored = tuple(sorted(v for v in used if v.startswith("ansible_") and v not in HONOURED))
    return Inventory(hosts, ignored)


def _looks_like_yaml(text: str) -> bool:
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        return line.startswith("---") or (line.endswith(":") and not line.startswith("["))
    return False


def native_refusal(path: str, text: str) -> str | None:
    """Why the native INI reader would not agree with ansible-core on this file (None: it will)."""
    if _looks_like_yaml(text):
        return f"--hosts {path}: a YAML inventory; {JSON_HINT}"
    folder = os.path.dirname(os.path.abspath(path))
    for sub in ("group_vars", "host_vars"):
        if os.path.isdir(os.path.join(folder, sub)):
            return f"--hosts {path}: {sub}/ beside the inventory holds variables Ansible applies; {JSON_HINT}"
    return None


def load_any_inventory(path: str) -> Inventory:
    """`--hosts FILE`: ansible-inventory JSON, a plain list or Ansible INI; UsageError (one line) otherwise."""
    text = read_inventory_file(path)
    if text.lstrip().startswith("{"):
        inventory = read_ansible_json(text, source=path)
    else:
        if (why := native_refusal(path, text)) is not None:
            raise UsageError(why)
        inventory = read_inventory(text, source=path)
    if not inventory.hosts:
        raise UsageError(f"--hosts {path}: no hosts in the inventory")
    return inventory


__all__ = ["JSON_HINT", "load_any_inventory", "native_refusal", "read_ansible_json"]
