from django.apps import AppConfig


class SlackbotConfig(AppConfig):
    name = "slackbot"
    label = "slackbot"

    def ready(self) -> None:
        # Bot events reach the bot through the hook the Slack connector offers (connectors sit below
        # the surfaces and never import the bot).
        from connectors.slack.views import register_bot_handler
        from slackbot.views import handle_bot_event

        register_bot_handler(handle_bot_event)
