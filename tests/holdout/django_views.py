"""Django views for the concierge chat widget."""
import json

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_POST
from openai import OpenAI

from .models import ChatTurn, GuestProfile

client = OpenAI()

CONCIERGE_RULES = """You are the hotel concierge assistant.
- Answer only questions about the hotel, its restaurants and the local area.
- Never promise upgrades or refunds; offer to connect the guest with the front desk instead.
- Keep answers under 120 words unless the guest asks for detail.
""" + "- Answer the guest in the language of the question; give opening hours and prices as listed.\n" * 60


def _profile_dict(profile: GuestProfile) -> dict:
    data = {"name": profile.display_name, "tier": profile.loyalty_tier}
    if profile.dietary_notes:
        data["dietary"] = profile.dietary_notes
    for key, value in profile.preferences.items():
        data[key] = value
    return data


@login_required
@require_POST
def chat(request: HttpRequest) -> JsonResponse:
    body = json.loads(request.body)
    profile = GuestProfile.objects.get(user=request.user)
    history = [
        {"role": t.role, "content": t.content}
        for t in ChatTurn.objects.filter(user=request.user).order_by("created_at")
    ]
    system = (
        f"Guest: {request.user.get_full_name()} (room {body['room']}).\n"  # expect: CL104
        + CONCIERGE_RULES
        + "\nGuest profile: "
        + json.dumps(_profile_dict(profile))  # CL102 only where the tree keeps the profile in jsonb (its models are not here)
    )
    messages = [{"role": "system", "content": system}, *history, {"role": "user", "content": body["message"]}]
    completion = client.chat.completions.create(model="gpt-4o", messages=messages, temperature=0.3)
    reply = completion.choices[0].message.content
    ChatTurn.objects.create(user=request.user, role="user", content=body["message"])
    ChatTurn.objects.create(user=request.user, role="assistant", content=reply)
    return JsonResponse({"reply": reply})


@login_required
def export_history(request: HttpRequest) -> JsonResponse:
    turns = ChatTurn.objects.filter(user=request.user).order_by("created_at")
    payload = [{"role": t.role, "content": t.content, "at": t.created_at.isoformat()} for t in turns]
    return JsonResponse({"turns": payload, "raw": json.dumps(payload)})
