"""ACL bindings persisted in `<data_dir>/security/acls.json`, replaced atomically on change."""

from __future__ import annotations

import json
import os

from minibroker.broker.security.acls import AclBinding, AclFilter
from minibroker.storage.durable_files import atomic_write


class AclStore:
    def __init__(self, data_dir: str) -> None:
        self.path = os.path.join(data_dir, "security", "acls.json")
        self.acls: list[AclBinding] = []
        if os.path.exists(self.path):
            with open(self.path, encoding="utf-8") as f:
                self.acls = [AclBinding(*row) for row in json.load(f)]

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
        atomic_write(self.path, json.dumps([acl.to_json() for acl in self.acls]).encode())
