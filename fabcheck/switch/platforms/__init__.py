"""One driver module per switch platform; each platform's record (fabcheck.intent.platforms) names its
driver class, which fabcheck.switch.driver.driver_for imports when a push needs it."""
