"""openai-agents' own ``AdvancedSQLiteSession`` tests (tests/extensions/memory/
test_advanced_sqlite_session.py of the pinned sdist, see :mod:`.upstream`) against
:class:`~axio_context_openai_agents.AxioAdvancedSession` (issue 34 part 3).

Every test that uses only the public API runs; :data:`EXCLUDED` lists the others, each with why
(they read or build its private tables, or call its private SQLite helpers). Each test runs
twice: on SQLite files, then on a PostgreSQL database of its own on the real server.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

import pytest

from .upstream import ensure_upstream

sys.path.insert(0, str(ensure_upstream()))

_TABLES = (
    "its private tables (`message_structure`, `turn_usage`, `agent_messages`) read or written with raw SQL"
)
_HOOKS = (
    "its private SQLite connection, locks and workers "
    "(`_locked_connection`, `_connections`, `_lock`, sqlite3 probes)"
)
_PRIVATE = (
    "its private helpers patched or called (`_capture_current_turn`, `_run_ordered_turn_operation`, "
    "`_branch_state`, `_generation`, `_cleanup_orphaned_messages`, `_update_turn_usage_internal`, "
    "`asyncio.to_thread` gates on its workers: `_commit_branch_pointer`, `_copy_sync`, `_pop_item_sync`)"
)
_RESERVATIONS = "its private `branch_reservations` table (dropped, failed or migrated with raw SQL)"
_CLEARS = "its private `session_clear_generations` table and clear generations"
_OWNERS = (
    "its private structure tables' ownership "
    "(`create_tables`, custom table names, owner metadata built with sqlite3)"
)
_PROCESSES = (
    "its private reservation hooks patched in child processes (`_reserve_branch_id`, `_pop_item_sync`)"
)
EXCLUDED: dict[str, str] = {
    "test_advanced_session_respects_custom_table_names": _OWNERS,
    "test_add_items_rolls_back_messages_when_structure_metadata_fails": _TABLES,
    "test_add_items_can_retry_after_structure_metadata_failure": _TABLES,
    "test_add_items_failure_preserves_existing_history": _TABLES,
    "test_add_items_rolls_back_partial_structure_metadata_write": _TABLES,
    "test_add_items_rollback_failure_invalidates_connection": _HOOKS,
    "test_structure_initialization_failure_invalidates_connection": _HOOKS,
    "test_post_commit_cancellation_propagates_after_known_mutation_outcome": _HOOKS,
    "test_auxiliary_mutation_cancellation_waits_for_commit": _HOOKS,
    "test_tool_usage_reads_legacy_shell_and_patch_names": _TABLES,
    "test_failed_branch_reservation_rolls_back_and_allows_retry": _RESERVATIONS,
    "test_branch_reservations_migrate_existing_populated_branches": _RESERVATIONS,
    "test_legacy_branch_ids_are_backfilled_before_destructive_operations": _RESERVATIONS,
    "test_legacy_destructive_noops_leave_database_unlocked": _RESERVATIONS,
    "test_branch_allocation_is_serialized_across_processes": _PROCESSES,
    "test_pop_item_claim_is_unique_across_processes": _PROCESSES,
    "test_delete_branch_removes_branch_only_messages": _TABLES,
    "test_delete_branch_keeps_messages_still_referenced_by_another_branch": _TABLES,
    "test_orphan_cleanup_uses_set_based_delete_for_many_messages": _PRIVATE,
    "test_failed_usage_write_rolls_back_cached_connection": _HOOKS,
    "test_usage_tracking_failure_identity_follows_model_data_policy": _PRIVATE,
    "test_get_items_limit_skips_corrupt_newest_rows": _TABLES,
    "test_concurrent_add_items_preserves_message_structure_for_file_db": _TABLES,
    "test_clear_session_removes_structure_and_usage_metadata": _TABLES,
    "test_pop_item_removes_its_structure_row": _TABLES,
    "test_pop_item_removes_turn_usage_only_when_turn_emptied": _TABLES,
    "test_pop_item_respects_current_branch_and_keeps_shared_messages": _TABLES,
    "test_pop_item_deletes_shared_copied_message_only_when_unreferenced": _TABLES,
    "test_pop_item_uses_branch_snapshot_when_branch_switches_concurrently": _PRIVATE,
    "test_clear_before_branch_transaction_prevents_stale_reservation": _RESERVATIONS,
    "test_store_run_usage_waits_for_database_lock_off_event_loop": _HOOKS,
    "test_store_run_usage_cancellation_during_capture_waits_for_commit": _PRIVATE,
    "test_store_run_usage_keeps_target_while_capture_is_waiting": _PRIVATE,
    "test_store_run_usage_keeps_turn_when_history_changes_during_capture": _PRIVATE,
    "test_add_captures_coherent_branch_after_clear_publication": _PRIVATE,
    "test_queued_add_keeps_selected_branch": _PRIVATE,
    "test_queued_append_cannot_resurrect_deleted_branch": _PRIVATE,
    "test_turn_ordering_survives_reuse_on_another_event_loop": _PRIVATE,
    "test_default_read_does_not_initialize_clear_generation_table": _CLEARS,
    "test_switch_validation_cancellation_waits_for_generation_commit": _CLEARS,
    "test_pop_item_rolls_back_on_failure_after_earlier_delete": _PRIVATE,
    "test_clear_session_rolls_back_on_failure_after_earlier_delete": _TABLES,
    "test_structure_tables_reject_a_second_base_table_pair": _OWNERS,
    "test_structure_tables_reject_changed_sessions_with_shared_messages": _OWNERS,
    "test_structure_tables_reject_changed_messages_with_shared_sessions": _OWNERS,
    "test_identifier_resolution_leaves_connection_authorized": _OWNERS,
    "test_no_create_session_rejects_a_database_without_an_owner": _OWNERS,
    "test_no_create_session_rejects_owner_metadata_without_base_tables": _OWNERS,
    "test_structure_tables_reject_an_ownerless_layout": _OWNERS,
    "test_structure_tables_reject_malformed_owner_layouts": _OWNERS,
    "test_structure_tables_accept_equivalent_child_column_casing": _OWNERS,
    "test_concurrent_structure_table_claims_leave_one_coherent_owner": _OWNERS,
    "test_stale_switch_after_clear_does_not_repoint_to_deleted_branch": _PRIVATE,
    "test_stale_create_branch_after_clear_does_not_repoint": _PRIVATE,
    "test_queued_turn_mutation_releases_later_usage_capture": _PRIVATE,
    "test_stale_store_run_usage_not_recorded_against_reused_turn_number": _PRIVATE,
    "test_stale_store_run_usage_skipped_when_turn_removed_by_pop": _PRIVATE,
    "test_store_run_usage_survives_unrelated_branch_deletion": _PRIVATE,
    "test_clear_session_resets_current_branch_to_main": _RESERVATIONS,
    "test_store_run_usage_skips_when_current_branch_has_no_turn": _TABLES,
    "test_structure_tables_reject_distinct_non_ascii_identifiers": _OWNERS,
}

_module: Any = importlib.import_module("oa_upstream.test_advanced_sqlite_session")
for _name, _value in vars(_module).items():  # its tests and its fixtures
    if not _name.startswith("__") and _name not in EXCLUDED and _name not in globals():
        globals()[_name] = _value


#: every test runs on SQLite files, then on a PostgreSQL database of its own (conftest.py)
pytestmark = pytest.mark.usefixtures("upstream_on_each_backend")
