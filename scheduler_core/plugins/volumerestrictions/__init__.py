"""VolumeRestrictions plugin."""

from scheduler_core.plugins.volumerestrictions.volume_restrictions import VolumeRestrictions

__all__ = ["VolumeRestrictions"]
