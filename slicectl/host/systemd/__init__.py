"""systemd itself: the one D-Bus client of org.freedesktop.systemd1 (systemd), calendar events
read by systemd's own parser (systemd_calendar), sd_notify for a Type=notify service (notify),
and the release of the systemd installed here (hostinfo)."""
