"""The inventory API's hand-built answer: a host's PostgreSQL sources (runs.api.views)."""

from rest_framework import serializers


class BuildSourceSerializer(serializers.Serializer):
    key = serializers.CharField(help_text="what POST /api/builds/ takes as `source`")
    kind = serializers.CharField()
    version = serializers.CharField()
    sha256 = serializers.CharField()
    file_name = serializers.CharField()
    package = serializers.CharField()
    package_version = serializers.CharField()
    label = serializers.CharField()


class HostSourcesSerializer(serializers.Serializer):
    host = serializers.IntegerField()
    sources = BuildSourceSerializer(many=True)


class HostSourcesUnknownSerializer(serializers.Serializer):
    host = serializers.IntegerField()
    detail = serializers.CharField(help_text="why the host could not be asked")
