"""The shift study: trained models under shifted test laws (declared in ``study``)."""
