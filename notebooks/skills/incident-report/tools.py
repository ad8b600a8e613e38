"""Tools of the incident-report skill (loaded by ark.load_skills from this folder)."""

import arknb as ark


@ark.tool(read_only=True)
def incident_template(service: str) -> str:
    """The headings of an incident report for a service, with its log time line.

    Args:
        service: the service the incident was about.
    """
    return (f"# Incident: {service}\n"
            "## What happened\n03:12 out of memory; 03:13 requests failing\n"
            "## Why\n\n## What we did\n")
