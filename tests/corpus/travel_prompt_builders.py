"""Prompt assembly helpers for the travel-planning assistant (Anthropic)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from anthropic import Anthropic

client = Anthropic()
MODEL = "claude-sonnet-4-5"
CAPABILITIES = {"flights", "hotels", "trains", "car rental", "visa rules"}

PERSONA = (
    "You are Wayfarer, a travel-planning assistant. Propose concrete itineraries with prices and travel "
    "times, flag visa requirements, and always ask before booking anything on the user's behalf."
)


def capabilities_line() -> str:
    return "You can help with: " + ", ".join(CAPABILITIES) + "."  # expect: CL103


def clock_line(now: datetime | None = None) -> str:
    now = now or datetime.now()  # expect: CL101
    return f"Current date and time: {now:%A %d %B %Y, %H:%M}"


class SystemPromptBuilder:
    def __init__(self, persona: str) -> None:
        self.sections = [persona]

    def with_section(self, text: str) -> "SystemPromptBuilder":
        self.sections.append(text)
        return self

    def build(self) -> str:
        return "\n\n".join(self.sections)


@dataclass
class Trip:
    destination: str
    travellers: int
    notes: list[str] = field(default_factory=list)


def plan_trip(trip: Trip, request: str) -> str:
    system = PERSONA + "\n\n" + capabilities_line()
    system += f"\nToday is {datetime.now():%A %d %B %Y}."  # a date: one prefix a day (no finding)
    response = client.messages.create(
        model=MODEL,
        max_tokens=2000,
        system=system,
        messages=[{"role": "user", "content": f"{trip.destination}, {trip.travellers} travellers. {request}"}],
    )
    return response.content[0].text


def quick_question(question: str) -> str:
    response = client.messages.create(model=MODEL, max_tokens=500, system=PERSONA + "\n" + clock_line(),
                                      messages=[{"role": "user", "content": question}])
    return response.content[0].text


def plan_trip_builder(trip: Trip, request: str) -> str:
    builder = SystemPromptBuilder(PERSONA).with_section(f"Generated at {datetime.now().isoformat(timespec='seconds')}")  # expect: CL101
    response = client.messages.create(model=MODEL, max_tokens=2000, system=builder.build(),
                                      messages=[{"role": "user", "content": f"{trip.destination}: {request}"}])
    return response.content[0].text


def trip_summary(trip: Trip) -> str:
    """For the confirmation email, not for the model."""
    return f"{trip.destination} for {trip.travellers}, planned {datetime.now():%d.%m.%Y %H:%M}"
