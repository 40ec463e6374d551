"""The summaries' JSON: the same figures as their pages (monitoring's summary modules)."""

from rest_framework import serializers

COUNTS = serializers.DictField(child=serializers.IntegerField())


class JobSiteSerializer(serializers.Serializer):
    site = serializers.CharField(help_text="'' for the jobs not placed at a site yet")
    counts = serializers.DictField(child=serializers.IntegerField(), help_text="state -> jobs")
    total = serializers.IntegerField()
    finished = serializers.IntegerField()
    failed = serializers.IntegerField()
    efficiency = serializers.FloatField(
        allow_null=True, help_text="finished / (finished + failed); null when neither"
    )


class JobSummarySerializer(serializers.Serializer):
    states = serializers.ListField(
        child=serializers.CharField(), help_text="the states with a job, in lifecycle order"
    )
    sites = JobSiteSerializer(many=True)
    totals = JobSiteSerializer(help_text="every site together (site is '')")


class ExampleSerializer(serializers.Serializer):
    task_queue = serializers.IntegerField(help_text="the largest such TaskQueue")
    job = serializers.IntegerField(help_text="its lowest waiting job id")
    jobs = serializers.IntegerField(help_text="its waiting jobs")


class HeldCESerializer(serializers.Serializer):
    site = serializers.CharField()
    ce = serializers.CharField()
    counts = serializers.DictField(
        child=serializers.IntegerField(),
        help_text="'matches' or the first failing rule -> waiting jobs",
    )
    examples = serializers.DictField(child=ExampleSerializer())


class HeldTaskQueueSerializer(serializers.Serializer):
    task_queue = serializers.IntegerField()
    owner = serializers.CharField()
    group = serializers.CharField()
    jobs = serializers.IntegerField(help_text="its waiting jobs you may see")
    example_job = serializers.IntegerField()
    matching_ces = serializers.IntegerField()
    rules = serializers.DictField(
        child=serializers.IntegerField(), help_text="first failing rule -> CEs"
    )
    shortfall = serializers.CharField(help_text="why no active CE serves it, when none does")


class HeldBackSerializer(serializers.Serializer):
    waiting = serializers.IntegerField()
    held = serializers.IntegerField(help_text="waiting jobs in TaskQueues no active CE matches")
    held_by_rule = serializers.DictField(
        child=serializers.IntegerField(),
        help_text="those jobs by the rule that fails at most CEs for their TaskQueue",
    )
    outcomes = serializers.ListField(child=serializers.CharField())
    ces = HeldCESerializer(many=True)
    taskqueue_count = serializers.IntegerField()
    taskqueues = HeldTaskQueueSerializer(many=True, help_text="the 50 most held back")


class PilotCESerializer(serializers.Serializer):
    ce = serializers.CharField()
    counts = serializers.DictField(child=serializers.IntegerField(), help_text="state -> pilots")
    total = serializers.IntegerField()
    jobs = serializers.IntegerField(help_text="the jobs its pilots ran")
    ended = serializers.IntegerField(help_text="pilots Done, Failed or Aborted")
    ended_with_job = serializers.IntegerField()
    pilots_per_job = serializers.FloatField(allow_null=True)
    efficiency = serializers.FloatField(
        allow_null=True, help_text="pilot job efficiency: ended_with_job / ended"
    )


class PilotSiteSerializer(PilotCESerializer):
    site = serializers.CharField()
    ces = PilotCESerializer(many=True)


class PilotSummarySerializer(serializers.Serializer):
    states = serializers.ListField(child=serializers.CharField())
    sites = PilotSiteSerializer(many=True)
    total = PilotCESerializer(allow_null=True)


class ErrorGroupSerializer(serializers.Serializer):
    key = serializers.CharField(
        help_text="the error code, error category, reason, site, task id or user name"
    )
    label = serializers.CharField(help_text="as the page shows it")
    count = serializers.IntegerField()
    example_job = serializers.IntegerField()


class SiteErrorsSerializer(serializers.Serializer):
    site = serializers.CharField(help_text="'' for jobs at no site")
    counts = serializers.DictField(
        child=serializers.IntegerField(), help_text="failed jobs per error category"
    )
    total = serializers.IntegerField()


class BucketSerializer(serializers.Serializer):
    at = serializers.DateTimeField()
    failed = serializers.IntegerField()


class ErrorSummarySerializer(serializers.Serializer):
    hours = serializers.IntegerField()
    since = serializers.DateTimeField()
    until = serializers.DateTimeField()
    total = serializers.IntegerField()
    bucket = serializers.ChoiceField(choices=["minute", "hour", "day"])
    histogram = BucketSerializer(many=True)
    by_code = ErrorGroupSerializer(many=True, help_text="PanDA pilot error codes")
    by_category = ErrorGroupSerializer(many=True)
    site_errors = SiteErrorsSerializer(many=True, help_text="the site x error category view")
    by_reason = ErrorGroupSerializer(many=True)
    by_site = ErrorGroupSerializer(many=True)
    by_task = ErrorGroupSerializer(many=True)
    by_user = ErrorGroupSerializer(many=True)
