"""The change event and its representations.

Owns the canonical change event (`change`, DESIGN.md section 3, a contract), its Arrow form (`arrow`), a
batch's events in the driver (`batch`), the decode step's per-table files (`decoded`), and the Arrow helpers
those share (`arrow_tables`, `arrow_text`).
"""
