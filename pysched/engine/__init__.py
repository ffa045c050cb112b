"""The engine: runs from firing to final state (the forecast is its offline twin)."""
