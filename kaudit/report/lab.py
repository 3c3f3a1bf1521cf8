"""Render the lab's state: ``kaudit.lab/v1`` (status) and ``kaudit.lab.env/v1`` (exports)."""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Any

from tabulate import tabulate

from kaudit.lab.state import LabNode, LabState, NodeState, node_state
from kaudit.lab.tiered import remote_root
from kaudit.report.base import Report, text_only

STATUS_SCHEMA = "kaudit.lab/v1"
ENV_SCHEMA = "kaudit.lab.env/v1"


@dataclass(frozen=True)
class LabStatus:
    """The lab as a command left it."""

    state: LabState
    purged: bool | None = None
    """``lab down`` only: whether the data was deleted too."""


def _node_row(node: LabNode) -> dict[str, Any]:
    st = node_state(node)
    return {
        "id": node.id,
        "role": node.role,
        "pid": node.pid if st is not NodeState.down else None,
        "port": node.port,
        "state": st.value,
        "alive": st is NodeState.running,
        "log": str(node.log_path),
    }


def status_document(status: LabStatus) -> dict[str, Any]:
    """The ``kaudit.lab/v1`` status document."""
    state = status.state
    doc: dict[str, Any] = {
        "schema": STATUS_SCHEMA,
        "state_dir": state.state_dir,
        "kafka_version": state.kafka_version,
        "cluster_id": state.cluster_id,
        "bootstrap": state.bootstrap,
        "security": state.security,
        "client_properties": str(state.client_properties) if state.client_properties else None,
        "quorum": state.quorum,
        # Where LocalTieredStorage keeps the remote segments (lab up --tiered-storage).
        "tiered_storage": str(remote_root(state.state_dir)) if state.tiered_storage else None,
        "brokers": [_node_row(n) for n in state.brokers],
        "controllers": [_node_row(n) for n in state.controllers],
        # The Kafka Connect worker (lab up --connect): its REST API at its port.
        "connect": [_node_row(n) | {"rest": f"http://127.0.0.1:{n.port}"}
                    for n in state.connect_workers],
    }
    if status.purged is not None:
        doc["purged"] = status.purged
    return doc


def _controllers(count: int) -> str:
    return f"{count} controller{'s' if count != 1 else ''}"


def status_table(status: LabStatus) -> str:
    """Bootstrap, version, state directory, then one row per node."""
    doc = status_document(status)
    rows = [(n["id"], n["role"], n["pid"] or "-", n["port"], n["state"])
            for n in doc["brokers"] + doc["controllers"] + doc["connect"]]
    return (f"bootstrap  {doc['bootstrap']}\nkafka      {doc['kafka_version']}\n"
            f"state dir  {doc['state_dir']}\n"
            f"quorum     {doc['quorum']}, {_controllers(len(doc['controllers']))}\n"
            + (f"tiered     remote segments in {doc['tiered_storage']}\n"
               if doc["tiered_storage"] else "")
            + (f"security   {doc['security']}, client settings in {doc['client_properties']}\n"
               if doc["client_properties"] else "")
            + "\n" + tabulate(rows, headers=["node", "role", "pid", "port", "state"]) + "\n")


def env_variables(state: LabState) -> dict[str, str | None]:
    """The variables that point kaudit at the lab (None: unset it)."""
    return {
        "KAUDIT_BOOTSTRAP_SERVERS": state.bootstrap,
        # A plaintext lab must not inherit a secured lab's settings from an earlier eval.
        "KAUDIT_COMMAND_CONFIG": (str(state.client_properties)
                                  if state.client_properties is not None else None),
    }


def env_document(state: LabState) -> dict[str, Any]:
    """The ``kaudit.lab.env/v1`` document."""
    return {"schema": ENV_SCHEMA, "variables": env_variables(state)}


def env_exports(state: LabState) -> str:
    """Shell lines for ``eval "$(kaudit lab env)"``."""
    return "".join(f"export {name}={shlex.quote(value)}\n" if value is not None
                   else f"unset {name}\n" for name, value in env_variables(state).items())


LAB_STATUS: Report[LabStatus] = Report(name="lab status", document=status_document,
                                       renderers={"table": text_only(status_table)})
"""``kaudit lab status``, and the JSON the other lab commands print with ``-f json``."""

LAB_ENV: Report[LabState] = Report(name="lab env", document=env_document,
                                   renderers={"table": text_only(env_exports)})
"""``kaudit lab env``: shell exports, or the same variables as JSON."""
