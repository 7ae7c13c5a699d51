"""The monitor's configuration: one YAML file read once into frozen records.

``load_config(path)`` returns a :class:`MonitorConfig`; stages receive its records, never
raw dicts. See ``config/monitor.example.yaml`` for every key.
"""

from monitor.config.common import (
    ExporterConfig,
    HttpExporterConfig,
    LinksConfig,
    NotifierConfig,
    PushgatewayExporterConfig,
    ScheduleConfig,
    TextfileExporterConfig,
)
from monitor.config.hashing import config_hash
from monitor.config.load import (
    default_config,
    default_store_path,
    load_checked,
    load_config,
    load_config_text,
)
from monitor.config.model import (
    BaselineConfig,
    Check,
    EvalSetConfig,
    InvariantConfig,
    MonitorConfig,
    MustInclude,
    NoLostHits,
    PersistenceConfig,
    RuleConfig,
    RunnerConfig,
    ScoringConfig,
    SearchConfig,
    Secret,
    SignificanceConfig,
    StoreConfig,
    SuiteConfig,
)
from monitor.config.schema import config_schema

__all__ = [
    "BaselineConfig",
    "Check",
    "EvalSetConfig",
    "ExporterConfig",
    "HttpExporterConfig",
    "InvariantConfig",
    "LinksConfig",
    "MonitorConfig",
    "MustInclude",
    "NoLostHits",
    "NotifierConfig",
    "PersistenceConfig",
    "PushgatewayExporterConfig",
    "RuleConfig",
    "RunnerConfig",
    "ScheduleConfig",
    "ScoringConfig",
    "SearchConfig",
    "Secret",
    "SignificanceConfig",
    "StoreConfig",
    "SuiteConfig",
    "TextfileExporterConfig",
    "config_hash",
    "config_schema",
    "default_config",
    "default_store_path",
    "load_checked",
    "load_config",
    "load_config_text",
]
