"""benchlab's date and time formats (FORMAT_MODULE_PATH): they win over Django's locale's."""
