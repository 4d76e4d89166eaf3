"""What tenants did: history items (reads, deletes, downloads and their file names),
exports, usage statistics and daily roll-ups, the breakdown by voice and source, and
retention (purging history and job audio past a plan's window).

May import: synthesis (a record's audio file), jobs (a job's files), the catalogue,
models and accounts. Never realtime.
"""

from tts.usage.breakdown import BREAKDOWN_LABELS, BREAKDOWNS, UsageTable, usage_breakdown
from tts.usage.download_names import content_disposition, filename_for
from tts.usage.export import (
    DOWNLOAD_FORMATS,
    ExportError,
    captions_srt,
    captions_vtt,
    export_audio,
    history_archive_chunks,
    history_archive_size,
    playable_audio,
    stored_audio_is_raw,
)
from tts.usage.history import HistoryItemPending, history_for_tenant, history_item_delete, history_item_get
from tts.usage.retention import purge_expired_history
from tts.usage.rollup import daily_usage, rollup_usage
from tts.usage.stats import characters_per_day

__all__ = [
    "BREAKDOWNS",
    "BREAKDOWN_LABELS",
    "DOWNLOAD_FORMATS",
    "ExportError",
    "HistoryItemPending",
    "UsageTable",
    "captions_srt",
    "captions_vtt",
    "characters_per_day",
    "content_disposition",
    "daily_usage",
    "export_audio",
    "filename_for",
    "history_archive_chunks",
    "history_archive_size",
    "history_for_tenant",
    "history_item_delete",
    "history_item_get",
    "playable_audio",
    "purge_expired_history",
    "rollup_usage",
    "stored_audio_is_raw",
    "usage_breakdown",
]
