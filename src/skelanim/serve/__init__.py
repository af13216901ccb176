"""Live streams: motion to avatars and back over the VMC protocol (:mod:`.vmc` sends, :mod:`.record` records)."""
