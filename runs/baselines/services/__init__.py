"""Every write of a fio baseline's life."""
