"""ACL bindings persisted in `<data_dir>/security/acls.json`, replaced atomically on change."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

from minibroker.broker.security.acls import AclBinding, AclFilter
from minibroker.storage.durable_files import atomic_write, read_json

# the types of an AclBinding's fields, in the order acls.json lists them
_FIELD_TYPES = (int, str, int, str, str, int, int)


def _acls_of(rows: Any) -> list[AclBinding]:
    """The bindings of acls.json (as json.loads gives it); InvalidAcl is a ValueError."""
    if not isinstance(rows, list):
        raise ValueError("not a JSON list of ACL bindings")
    acls = []
    for row in rows:
        if not (
            isinstance(row, list)
            and len(row) == len(_FIELD_TYPES)
            and all(type(v) is t for v, t in zip(row, _FIELD_TYPES, strict=True))
        ):
            raise ValueError(f"not an ACL binding: {str(row)[:200]}")
        acl = AclBinding(*row)
        acl.validate()
        acls.append(acl)
    return acls


class AclStore:
    def __init__(self, data_dir: str, write: Callable[[str, bytes], None] = atomic_write) -> None:
        """``write``: how the file is replaced (the broker's ``Durability.write_file``: off the
        event loop, the answer waits for it)."""
        self.path = os.path.join(data_dir, "security", "acls.json")
        self._write = write
        self.acls: list[AclBinding] = []
        if os.path.exists(self.path):
            self.acls = self._load()

    def _load(self) -> list[AclBinding]:
        # an ACL misread would grant or refuse the wrong thing: refuse to start instead
        return read_json(
            self.path,
            _acls_of,
            "move it away to start with no ACLs and create them again (until then only "
            "super.users are authorized, or everyone if allow.everyone.if.no.acl.found=true)",
        )

    def add(self, bindings: list[AclBinding]) -> None:
        known = set(self.acls)
        self.acls.extend(b for b in dict.fromkeys(bindings) if b not in known)
        self._save()

    def remove(self, filters: list[AclFilter]) -> list[list[AclBinding]]:
        """Delete every binding matching each filter; returns what each filter matched."""
        matched = [[acl for acl in self.acls if f.matches(acl)] for f in filters]
        doomed = {acl for group in matched for acl in group}
        if doomed:
            self.acls = [acl for acl in self.acls if acl not in doomed]
            self._save()
        return matched

    def find(self, acl_filter: AclFilter) -> list[AclBinding]:
        return [acl for acl in self.acls if acl_filter.matches(acl)]

    def _save(self) -> None:
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        self._write(self.path, json.dumps([acl.to_json() for acl in self.acls]).encode())
