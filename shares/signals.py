from django.dispatch import Signal

# Sent after a group's JobShare or properties changed (kwargs: group_ids). The matcher
# recomputes those groups' TaskQueue priorities (shares never imports the matcher).
shares_changed = Signal()
