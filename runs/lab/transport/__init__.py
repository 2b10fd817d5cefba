"""Running commands on a host: the Transport interface, SSH and local transports, reconnecting,
waiting."""
