from django.urls import path

from identity import scim

urlpatterns = [
    path("ServiceProviderConfig", scim.service_provider_config, name="scim-spc"),
    path("ResourceTypes", scim.resource_types, name="scim-resource-types"),
    path("ResourceTypes/<str:name>", scim.resource_type, name="scim-resource-type"),
    path("Schemas", scim.schemas, name="scim-schemas"),
    path("Schemas/<str:urn>", scim.schema, name="scim-schema"),
    path(".search", scim.root_search, name="scim-search"),
    path("Users/.search", scim.user_search, name="scim-users-search"),
    path("Groups/.search", scim.group_search, name="scim-groups-search"),
    path("Users", scim.users, name="scim-users"),
    path("Users/<str:pk>", scim.user_detail, name="scim-user"),
    path("Groups", scim.groups, name="scim-groups"),
    path("Groups/<str:pk>", scim.group_detail, name="scim-group"),
    path("<path:rest>", scim.not_found, name="scim-not-found"),
]
