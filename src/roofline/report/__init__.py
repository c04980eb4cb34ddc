"""Stage 4: what people read and look at (terminal tables now; PNG and HTML next)."""

from roofline.report.table import format_table, summary_columns

__all__ = ["format_table", "summary_columns"]
