"""The switch half: render the desired switch state with the platform's templates and push it
through the platform's own transaction (one driver class per platform, netmiko underneath)."""
