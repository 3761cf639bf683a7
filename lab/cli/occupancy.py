"""`lab occupancy` (placeholder module; filled in by the occupancy feature)."""
