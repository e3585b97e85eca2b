"""(being written) hardware catalog."""
