"""Appointment reminders: OpenAI writes the text, Twilio sends it (its client is also called `client`)."""

from __future__ import annotations

import os
from datetime import datetime, timedelta

from openai import OpenAI
from twilio.rest import Client

openai_client = OpenAI()
client = Client(os.environ["TWILIO_ACCOUNT_SID"], os.environ["TWILIO_AUTH_TOKEN"])
SYSTEM = "You write short, friendly SMS appointment reminders for a dental practice. Max 300 characters. No emojis."


def reminder_text(patient_name: str, starts_at: datetime) -> str:
    now = datetime.now()
    response = openai_client.chat.completions.create(
        model="gpt-4o-mini",
        messages=[
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": f"Patient: {patient_name}. Appointment: {starts_at:%A %d %B at %H:%M}. Now: {now:%Y-%m-%d %H:%M}."},
        ],
    )
    return response.choices[0].message.content.strip()


def send_due_reminders(appointments) -> int:
    window_end = datetime.now() + timedelta(hours=24)
    sent = 0
    for appt in appointments:
        if appt.reminded or appt.starts_at > window_end:
            continue
        body = reminder_text(appt.patient_name, appt.starts_at)
        client.messages.create(
            body=f"{body} (sent {datetime.now():%H:%M})",
            from_=os.environ["TWILIO_FROM"],
            to=appt.phone,
            status_callback=f"https://clinic.example/sms/{appt.id}?t={datetime.now().timestamp()}",
        )
        appt.reminded = True
        sent += 1
    return sent


def flush_retry_queue(queue: list[dict]) -> None:
    messages = list(queue)
    while messages:
        item = messages.pop(0)
        client.messages.create(body=item["body"], from_=os.environ["TWILIO_FROM"], to=item["to"])
