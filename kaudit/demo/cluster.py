"""The demo's own work on the lab cluster: its connection, its topics' configs, the wait
for every replica to be back in sync."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kaudit.demo.model import CONNECT_TIMEOUT_S, DemoTopic

if TYPE_CHECKING:
    from kaudit.connection.settings import ConnectionSettings
    from kaudit.lab.state import LabState

_MANAGED_CONFIGS = ("min.insync.replicas", "unclean.leader.election.enable")


def lab_connection(state: LabState) -> ConnectionSettings:
    """Settings for the lab itself (never the user's context or environment)."""
    # A secured lab: its ordinary user (alice), whose ACLs cover all the demo does.
    return state.connection(timeout=CONNECT_TIMEOUT_S)


def reset_topic_configs(session: Any, topic: DemoTopic) -> None:
    """Give an existing demo topic the demo's topic-level configs again (a rerun)."""
    from kaudit.cluster.client import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

    wanted = {"min.insync.replicas": topic.min_insync_replicas,
              "unclean.leader.election.enable": topic.unclean_leader_election}
    entries = []
    for key in _MANAGED_CONFIGS:
        value = wanted[key]
        if value is None:
            entries.append(ConfigEntry(key, None,
                                       incremental_operation=AlterConfigOpType.DELETE))
        else:
            text = str(value).lower() if isinstance(value, bool) else str(value)
            entries.append(ConfigEntry(key, text, incremental_operation=AlterConfigOpType.SET))
    resource = ConfigResource(ResourceType.TOPIC, topic.name, incremental_configs=entries)
    future = session.admin.incremental_alter_configs(
        [resource], request_timeout=session.settings.timeout)[resource]
    session.wait(future)
