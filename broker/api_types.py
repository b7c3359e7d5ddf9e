"""The kio classes each handler takes and answers with, as one union per API (for the type
checker only).

kio generates one class per (api key, version) with no common base. A handler serving versions
a..b takes the union of their request classes (`FetchRequest` = FetchRequest v4 | ... | v12), so
mypy flags a field that some served version lacks: read those with `protocol.codec.field`. The
structs nested in requests get the same unions under their kio names (`FetchTopic`), prefixed
with the API's name where two APIs share one (`AlterConfigsAlterableConfig`).

Written from broker/dispatch.py's version ranges; tests/unit/test_handler_types.py checks
that each union holds exactly the versions served. Everything is under TYPE_CHECKING: importing
the schema modules costs over a second, and the broker loads them lazily (protocol/codec.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kio.schema.add_offsets_to_txn.v0.request import AddOffsetsToTxnRequest as AddOffsetsToTxnRequestV0
    from kio.schema.add_offsets_to_txn.v0.response import AddOffsetsToTxnResponse as AddOffsetsToTxnResponseV0
    from kio.schema.add_offsets_to_txn.v1.request import AddOffsetsToTxnRequest as AddOffsetsToTxnRequestV1
    from kio.schema.add_offsets_to_txn.v1.response import AddOffsetsToTxnResponse as AddOffsetsToTxnResponseV1
    from kio.schema.add_offsets_to_txn.v2.request import AddOffsetsToTxnRequest as AddOffsetsToTxnRequestV2
    from kio.schema.add_offsets_to_txn.v2.response import AddOffsetsToTxnResponse as AddOffsetsToTxnResponseV2
    from kio.schema.add_offsets_to_txn.v3.request import AddOffsetsToTxnRequest as AddOffsetsToTxnRequestV3
    from kio.schema.add_offsets_to_txn.v3.response import AddOffsetsToTxnResponse as AddOffsetsToTxnResponseV3
    from kio.schema.add_offsets_to_txn.v4.request import AddOffsetsToTxnRequest as AddOffsetsToTxnRequestV4
    from kio.schema.add_offsets_to_txn.v4.response import AddOffsetsToTxnResponse as AddOffsetsToTxnResponseV4
    from kio.schema.add_partitions_to_txn.v0.request import (
        AddPartitionsToTxnRequest as AddPartitionsToTxnRequestV0,
    )
    from kio.schema.add_partitions_to_txn.v0.request import (
        AddPartitionsToTxnTopic as AddPartitionsToTxnTopicV0,
    )
    from kio.schema.add_partitions_to_txn.v0.response import (
        AddPartitionsToTxnResponse as AddPartitionsToTxnResponseV0,
    )
    from kio.schema.add_partitions_to_txn.v1.request import (
        AddPartitionsToTxnRequest as AddPartitionsToTxnRequestV1,
    )
    from kio.schema.add_partitions_to_txn.v1.request import (
        AddPartitionsToTxnTopic as AddPartitionsToTxnTopicV1,
    )
    from kio.schema.add_partitions_to_txn.v1.response import (
        AddPartitionsToTxnResponse as AddPartitionsToTxnResponseV1,
    )
    from kio.schema.add_partitions_to_txn.v2.request import (
        AddPartitionsToTxnRequest as AddPartitionsToTxnRequestV2,
    )
    from kio.schema.add_partitions_to_txn.v2.request import (
        AddPartitionsToTxnTopic as AddPartitionsToTxnTopicV2,
    )
    from kio.schema.add_partitions_to_txn.v2.response import (
        AddPartitionsToTxnResponse as AddPartitionsToTxnResponseV2,
    )
    from kio.schema.add_partitions_to_txn.v3.request import (
        AddPartitionsToTxnRequest as AddPartitionsToTxnRequestV3,
    )
    from kio.schema.add_partitions_to_txn.v3.request import (
        AddPartitionsToTxnTopic as AddPartitionsToTxnTopicV3,
    )
    from kio.schema.add_partitions_to_txn.v3.response import (
        AddPartitionsToTxnResponse as AddPartitionsToTxnResponseV3,
    )
    from kio.schema.add_raft_voter.v0.request import AddRaftVoterRequest as AddRaftVoterRequestV0
    from kio.schema.add_raft_voter.v0.response import AddRaftVoterResponse as AddRaftVoterResponseV0
    from kio.schema.add_raft_voter.v1.request import AddRaftVoterRequest as AddRaftVoterRequestV1
    from kio.schema.add_raft_voter.v1.response import AddRaftVoterResponse as AddRaftVoterResponseV1
    from kio.schema.alter_client_quotas.v0.request import (
        AlterClientQuotasRequest as AlterClientQuotasRequestV0,
    )
    from kio.schema.alter_client_quotas.v0.response import (
        AlterClientQuotasResponse as AlterClientQuotasResponseV0,
    )
    from kio.schema.alter_client_quotas.v1.request import (
        AlterClientQuotasRequest as AlterClientQuotasRequestV1,
    )
    from kio.schema.alter_client_quotas.v1.response import (
        AlterClientQuotasResponse as AlterClientQuotasResponseV1,
    )
    from kio.schema.alter_configs.v0.request import AlterableConfig as AlterConfigsAlterableConfigV0
    from kio.schema.alter_configs.v0.request import AlterConfigsRequest as AlterConfigsRequestV0
    from kio.schema.alter_configs.v0.request import AlterConfigsResource as AlterConfigsAlterConfigsResourceV0
    from kio.schema.alter_configs.v0.response import AlterConfigsResponse as AlterConfigsResponseV0
    from kio.schema.alter_configs.v1.request import AlterableConfig as AlterConfigsAlterableConfigV1
    from kio.schema.alter_configs.v1.request import AlterConfigsRequest as AlterConfigsRequestV1
    from kio.schema.alter_configs.v1.request import AlterConfigsResource as AlterConfigsAlterConfigsResourceV1
    from kio.schema.alter_configs.v1.response import AlterConfigsResponse as AlterConfigsResponseV1
    from kio.schema.alter_configs.v2.request import AlterableConfig as AlterConfigsAlterableConfigV2
    from kio.schema.alter_configs.v2.request import AlterConfigsRequest as AlterConfigsRequestV2
    from kio.schema.alter_configs.v2.request import AlterConfigsResource as AlterConfigsAlterConfigsResourceV2
    from kio.schema.alter_configs.v2.response import AlterConfigsResponse as AlterConfigsResponseV2
    from kio.schema.alter_partition_reassignments.v0.request import (
        AlterPartitionReassignmentsRequest as AlterPartitionReassignmentsRequestV0,
    )
    from kio.schema.alter_partition_reassignments.v0.response import (
        AlterPartitionReassignmentsResponse as AlterPartitionReassignmentsResponseV0,
    )
    from kio.schema.alter_partition_reassignments.v1.request import (
        AlterPartitionReassignmentsRequest as AlterPartitionReassignmentsRequestV1,
    )
    from kio.schema.alter_partition_reassignments.v1.response import (
        AlterPartitionReassignmentsResponse as AlterPartitionReassignmentsResponseV1,
    )
    from kio.schema.alter_replica_log_dirs.v1.request import (
        AlterReplicaLogDirsRequest as AlterReplicaLogDirsRequestV1,
    )
    from kio.schema.alter_replica_log_dirs.v1.response import (
        AlterReplicaLogDirsResponse as AlterReplicaLogDirsResponseV1,
    )
    from kio.schema.alter_replica_log_dirs.v2.request import (
        AlterReplicaLogDirsRequest as AlterReplicaLogDirsRequestV2,
    )
    from kio.schema.alter_replica_log_dirs.v2.response import (
        AlterReplicaLogDirsResponse as AlterReplicaLogDirsResponseV2,
    )
    from kio.schema.alter_user_scram_credentials.v0.request import (
        AlterUserScramCredentialsRequest as AlterUserScramCredentialsRequestV0,
    )
    from kio.schema.alter_user_scram_credentials.v0.request import (
        ScramCredentialDeletion as ScramCredentialDeletionV0,
    )
    from kio.schema.alter_user_scram_credentials.v0.request import (
        ScramCredentialUpsertion as ScramCredentialUpsertionV0,
    )
    from kio.schema.alter_user_scram_credentials.v0.response import (
        AlterUserScramCredentialsResponse as AlterUserScramCredentialsResponseV0,
    )
    from kio.schema.api_versions.v0.request import ApiVersionsRequest as ApiVersionsRequestV0
    from kio.schema.api_versions.v0.response import ApiVersionsResponse as ApiVersionsResponseV0
    from kio.schema.api_versions.v1.request import ApiVersionsRequest as ApiVersionsRequestV1
    from kio.schema.api_versions.v1.response import ApiVersionsResponse as ApiVersionsResponseV1
    from kio.schema.api_versions.v2.request import ApiVersionsRequest as ApiVersionsRequestV2
    from kio.schema.api_versions.v2.response import ApiVersionsResponse as ApiVersionsResponseV2
    from kio.schema.api_versions.v3.request import ApiVersionsRequest as ApiVersionsRequestV3
    from kio.schema.api_versions.v3.response import ApiVersionsResponse as ApiVersionsResponseV3
    from kio.schema.api_versions.v4.request import ApiVersionsRequest as ApiVersionsRequestV4
    from kio.schema.api_versions.v4.response import ApiVersionsResponse as ApiVersionsResponseV4
    from kio.schema.consumer_group_describe.v0.request import (
        ConsumerGroupDescribeRequest as ConsumerGroupDescribeRequestV0,
    )
    from kio.schema.consumer_group_describe.v0.response import (
        ConsumerGroupDescribeResponse as ConsumerGroupDescribeResponseV0,
    )
    from kio.schema.consumer_group_describe.v1.request import (
        ConsumerGroupDescribeRequest as ConsumerGroupDescribeRequestV1,
    )
    from kio.schema.consumer_group_describe.v1.response import (
        ConsumerGroupDescribeResponse as ConsumerGroupDescribeResponseV1,
    )
    from kio.schema.consumer_group_heartbeat.v0.request import (
        ConsumerGroupHeartbeatRequest as ConsumerGroupHeartbeatRequestV0,
    )
    from kio.schema.consumer_group_heartbeat.v0.response import (
        ConsumerGroupHeartbeatResponse as ConsumerGroupHeartbeatResponseV0,
    )
    from kio.schema.consumer_group_heartbeat.v1.request import (
        ConsumerGroupHeartbeatRequest as ConsumerGroupHeartbeatRequestV1,
    )
    from kio.schema.consumer_group_heartbeat.v1.response import (
        ConsumerGroupHeartbeatResponse as ConsumerGroupHeartbeatResponseV1,
    )
    from kio.schema.create_acls.v1.request import AclCreation as AclCreationV1
    from kio.schema.create_acls.v1.request import CreateAclsRequest as CreateAclsRequestV1
    from kio.schema.create_acls.v1.response import CreateAclsResponse as CreateAclsResponseV1
    from kio.schema.create_acls.v2.request import AclCreation as AclCreationV2
    from kio.schema.create_acls.v2.request import CreateAclsRequest as CreateAclsRequestV2
    from kio.schema.create_acls.v2.response import CreateAclsResponse as CreateAclsResponseV2
    from kio.schema.create_acls.v3.request import AclCreation as AclCreationV3
    from kio.schema.create_acls.v3.request import CreateAclsRequest as CreateAclsRequestV3
    from kio.schema.create_acls.v3.response import CreateAclsResponse as CreateAclsResponseV3
    from kio.schema.create_delegation_token.v1.request import (
        CreateDelegationTokenRequest as CreateDelegationTokenRequestV1,
    )
    from kio.schema.create_delegation_token.v1.response import (
        CreateDelegationTokenResponse as CreateDelegationTokenResponseV1,
    )
    from kio.schema.create_delegation_token.v2.request import (
        CreateDelegationTokenRequest as CreateDelegationTokenRequestV2,
    )
    from kio.schema.create_delegation_token.v2.response import (
        CreateDelegationTokenResponse as CreateDelegationTokenResponseV2,
    )
    from kio.schema.create_delegation_token.v3.request import (
        CreateDelegationTokenRequest as CreateDelegationTokenRequestV3,
    )
    from kio.schema.create_delegation_token.v3.response import (
        CreateDelegationTokenResponse as CreateDelegationTokenResponseV3,
    )
    from kio.schema.create_partitions.v0.request import (
        CreatePartitionsAssignment as CreatePartitionsAssignmentV0,
    )
    from kio.schema.create_partitions.v0.request import CreatePartitionsRequest as CreatePartitionsRequestV0
    from kio.schema.create_partitions.v0.request import CreatePartitionsTopic as CreatePartitionsTopicV0
    from kio.schema.create_partitions.v0.response import (
        CreatePartitionsResponse as CreatePartitionsResponseV0,
    )
    from kio.schema.create_partitions.v1.request import (
        CreatePartitionsAssignment as CreatePartitionsAssignmentV1,
    )
    from kio.schema.create_partitions.v1.request import CreatePartitionsRequest as CreatePartitionsRequestV1
    from kio.schema.create_partitions.v1.request import CreatePartitionsTopic as CreatePartitionsTopicV1
    from kio.schema.create_partitions.v1.response import (
        CreatePartitionsResponse as CreatePartitionsResponseV1,
    )
    from kio.schema.create_partitions.v2.request import (
        CreatePartitionsAssignment as CreatePartitionsAssignmentV2,
    )
    from kio.schema.create_partitions.v2.request import CreatePartitionsRequest as CreatePartitionsRequestV2
    from kio.schema.create_partitions.v2.request import CreatePartitionsTopic as CreatePartitionsTopicV2
    from kio.schema.create_partitions.v2.response import (
        CreatePartitionsResponse as CreatePartitionsResponseV2,
    )
    from kio.schema.create_partitions.v3.request import (
        CreatePartitionsAssignment as CreatePartitionsAssignmentV3,
    )
    from kio.schema.create_partitions.v3.request import CreatePartitionsRequest as CreatePartitionsRequestV3
    from kio.schema.create_partitions.v3.request import CreatePartitionsTopic as CreatePartitionsTopicV3
    from kio.schema.create_partitions.v3.response import (
        CreatePartitionsResponse as CreatePartitionsResponseV3,
    )
    from kio.schema.create_topics.v2.request import CreatableReplicaAssignment as CreatableReplicaAssignmentV2
    from kio.schema.create_topics.v2.request import CreatableTopic as CreatableTopicV2
    from kio.schema.create_topics.v2.request import CreatableTopicConfig as CreatableTopicConfigV2
    from kio.schema.create_topics.v2.request import CreateTopicsRequest as CreateTopicsRequestV2
    from kio.schema.create_topics.v2.response import CreateTopicsResponse as CreateTopicsResponseV2
    from kio.schema.create_topics.v3.request import CreatableReplicaAssignment as CreatableReplicaAssignmentV3
    from kio.schema.create_topics.v3.request import CreatableTopic as CreatableTopicV3
    from kio.schema.create_topics.v3.request import CreatableTopicConfig as CreatableTopicConfigV3
    from kio.schema.create_topics.v3.request import CreateTopicsRequest as CreateTopicsRequestV3
    from kio.schema.create_topics.v3.response import CreateTopicsResponse as CreateTopicsResponseV3
    from kio.schema.create_topics.v4.request import CreatableReplicaAssignment as CreatableReplicaAssignmentV4
    from kio.schema.create_topics.v4.request import CreatableTopic as CreatableTopicV4
    from kio.schema.create_topics.v4.request import CreatableTopicConfig as CreatableTopicConfigV4
    from kio.schema.create_topics.v4.request import CreateTopicsRequest as CreateTopicsRequestV4
    from kio.schema.create_topics.v4.response import CreateTopicsResponse as CreateTopicsResponseV4
    from kio.schema.create_topics.v5.request import CreatableReplicaAssignment as CreatableReplicaAssignmentV5
    from kio.schema.create_topics.v5.request import CreatableTopic as CreatableTopicV5
    from kio.schema.create_topics.v5.request import CreatableTopicConfig as CreatableTopicConfigV5
    from kio.schema.create_topics.v5.request import CreateTopicsRequest as CreateTopicsRequestV5
    from kio.schema.create_topics.v5.response import CreateTopicsResponse as CreateTopicsResponseV5
    from kio.schema.create_topics.v6.request import CreatableReplicaAssignment as CreatableReplicaAssignmentV6
    from kio.schema.create_topics.v6.request import CreatableTopic as CreatableTopicV6
    from kio.schema.create_topics.v6.request import CreatableTopicConfig as CreatableTopicConfigV6
    from kio.schema.create_topics.v6.request import CreateTopicsRequest as CreateTopicsRequestV6
    from kio.schema.create_topics.v6.response import CreateTopicsResponse as CreateTopicsResponseV6
    from kio.schema.create_topics.v7.request import CreatableReplicaAssignment as CreatableReplicaAssignmentV7
    from kio.schema.create_topics.v7.request import CreatableTopic as CreatableTopicV7
    from kio.schema.create_topics.v7.request import CreatableTopicConfig as CreatableTopicConfigV7
    from kio.schema.create_topics.v7.request import CreateTopicsRequest as CreateTopicsRequestV7
    from kio.schema.create_topics.v7.response import CreateTopicsResponse as CreateTopicsResponseV7
    from kio.schema.delete_acls.v1.request import DeleteAclsFilter as DeleteAclsFilterV1
    from kio.schema.delete_acls.v1.request import DeleteAclsRequest as DeleteAclsRequestV1
    from kio.schema.delete_acls.v1.response import DeleteAclsResponse as DeleteAclsResponseV1
    from kio.schema.delete_acls.v2.request import DeleteAclsFilter as DeleteAclsFilterV2
    from kio.schema.delete_acls.v2.request import DeleteAclsRequest as DeleteAclsRequestV2
    from kio.schema.delete_acls.v2.response import DeleteAclsResponse as DeleteAclsResponseV2
    from kio.schema.delete_acls.v3.request import DeleteAclsFilter as DeleteAclsFilterV3
    from kio.schema.delete_acls.v3.request import DeleteAclsRequest as DeleteAclsRequestV3
    from kio.schema.delete_acls.v3.response import DeleteAclsResponse as DeleteAclsResponseV3
    from kio.schema.delete_groups.v0.request import DeleteGroupsRequest as DeleteGroupsRequestV0
    from kio.schema.delete_groups.v0.response import DeleteGroupsResponse as DeleteGroupsResponseV0
    from kio.schema.delete_groups.v1.request import DeleteGroupsRequest as DeleteGroupsRequestV1
    from kio.schema.delete_groups.v1.response import DeleteGroupsResponse as DeleteGroupsResponseV1
    from kio.schema.delete_groups.v2.request import DeleteGroupsRequest as DeleteGroupsRequestV2
    from kio.schema.delete_groups.v2.response import DeleteGroupsResponse as DeleteGroupsResponseV2
    from kio.schema.delete_records.v0.request import DeleteRecordsPartition as DeleteRecordsPartitionV0
    from kio.schema.delete_records.v0.request import DeleteRecordsRequest as DeleteRecordsRequestV0
    from kio.schema.delete_records.v0.request import DeleteRecordsTopic as DeleteRecordsTopicV0
    from kio.schema.delete_records.v0.response import DeleteRecordsResponse as DeleteRecordsResponseV0
    from kio.schema.delete_records.v1.request import DeleteRecordsPartition as DeleteRecordsPartitionV1
    from kio.schema.delete_records.v1.request import DeleteRecordsRequest as DeleteRecordsRequestV1
    from kio.schema.delete_records.v1.request import DeleteRecordsTopic as DeleteRecordsTopicV1
    from kio.schema.delete_records.v1.response import DeleteRecordsResponse as DeleteRecordsResponseV1
    from kio.schema.delete_records.v2.request import DeleteRecordsPartition as DeleteRecordsPartitionV2
    from kio.schema.delete_records.v2.request import DeleteRecordsRequest as DeleteRecordsRequestV2
    from kio.schema.delete_records.v2.request import DeleteRecordsTopic as DeleteRecordsTopicV2
    from kio.schema.delete_records.v2.response import DeleteRecordsResponse as DeleteRecordsResponseV2
    from kio.schema.delete_topics.v1.request import DeleteTopicsRequest as DeleteTopicsRequestV1
    from kio.schema.delete_topics.v1.response import DeleteTopicsResponse as DeleteTopicsResponseV1
    from kio.schema.delete_topics.v2.request import DeleteTopicsRequest as DeleteTopicsRequestV2
    from kio.schema.delete_topics.v2.response import DeleteTopicsResponse as DeleteTopicsResponseV2
    from kio.schema.delete_topics.v3.request import DeleteTopicsRequest as DeleteTopicsRequestV3
    from kio.schema.delete_topics.v3.response import DeleteTopicsResponse as DeleteTopicsResponseV3
    from kio.schema.delete_topics.v4.request import DeleteTopicsRequest as DeleteTopicsRequestV4
    from kio.schema.delete_topics.v4.response import DeleteTopicsResponse as DeleteTopicsResponseV4
    from kio.schema.delete_topics.v5.request import DeleteTopicsRequest as DeleteTopicsRequestV5
    from kio.schema.delete_topics.v5.response import DeleteTopicsResponse as DeleteTopicsResponseV5
    from kio.schema.delete_topics.v6.request import DeleteTopicsRequest as DeleteTopicsRequestV6
    from kio.schema.delete_topics.v6.request import DeleteTopicState as DeleteTopicStateV6
    from kio.schema.delete_topics.v6.response import DeleteTopicsResponse as DeleteTopicsResponseV6
    from kio.schema.describe_acls.v1.request import DescribeAclsRequest as DescribeAclsRequestV1
    from kio.schema.describe_acls.v1.response import DescribeAclsResponse as DescribeAclsResponseV1
    from kio.schema.describe_acls.v2.request import DescribeAclsRequest as DescribeAclsRequestV2
    from kio.schema.describe_acls.v2.response import DescribeAclsResponse as DescribeAclsResponseV2
    from kio.schema.describe_acls.v3.request import DescribeAclsRequest as DescribeAclsRequestV3
    from kio.schema.describe_acls.v3.response import DescribeAclsResponse as DescribeAclsResponseV3
    from kio.schema.describe_client_quotas.v0.request import (
        DescribeClientQuotasRequest as DescribeClientQuotasRequestV0,
    )
    from kio.schema.describe_client_quotas.v0.response import (
        DescribeClientQuotasResponse as DescribeClientQuotasResponseV0,
    )
    from kio.schema.describe_client_quotas.v1.request import (
        DescribeClientQuotasRequest as DescribeClientQuotasRequestV1,
    )
    from kio.schema.describe_client_quotas.v1.response import (
        DescribeClientQuotasResponse as DescribeClientQuotasResponseV1,
    )
    from kio.schema.describe_cluster.v0.request import DescribeClusterRequest as DescribeClusterRequestV0
    from kio.schema.describe_cluster.v0.response import DescribeClusterResponse as DescribeClusterResponseV0
    from kio.schema.describe_cluster.v1.request import DescribeClusterRequest as DescribeClusterRequestV1
    from kio.schema.describe_cluster.v1.response import DescribeClusterResponse as DescribeClusterResponseV1
    from kio.schema.describe_cluster.v2.request import DescribeClusterRequest as DescribeClusterRequestV2
    from kio.schema.describe_cluster.v2.response import DescribeClusterResponse as DescribeClusterResponseV2
    from kio.schema.describe_configs.v1.request import DescribeConfigsRequest as DescribeConfigsRequestV1
    from kio.schema.describe_configs.v1.request import DescribeConfigsResource as DescribeConfigsResourceV1
    from kio.schema.describe_configs.v1.response import DescribeConfigsResponse as DescribeConfigsResponseV1
    from kio.schema.describe_configs.v2.request import DescribeConfigsRequest as DescribeConfigsRequestV2
    from kio.schema.describe_configs.v2.request import DescribeConfigsResource as DescribeConfigsResourceV2
    from kio.schema.describe_configs.v2.response import DescribeConfigsResponse as DescribeConfigsResponseV2
    from kio.schema.describe_configs.v3.request import DescribeConfigsRequest as DescribeConfigsRequestV3
    from kio.schema.describe_configs.v3.request import DescribeConfigsResource as DescribeConfigsResourceV3
    from kio.schema.describe_configs.v3.response import DescribeConfigsResponse as DescribeConfigsResponseV3
    from kio.schema.describe_configs.v4.request import DescribeConfigsRequest as DescribeConfigsRequestV4
    from kio.schema.describe_configs.v4.request import DescribeConfigsResource as DescribeConfigsResourceV4
    from kio.schema.describe_configs.v4.response import DescribeConfigsResponse as DescribeConfigsResponseV4
    from kio.schema.describe_delegation_token.v1.request import (
        DescribeDelegationTokenRequest as DescribeDelegationTokenRequestV1,
    )
    from kio.schema.describe_delegation_token.v1.response import (
        DescribeDelegationTokenResponse as DescribeDelegationTokenResponseV1,
    )
    from kio.schema.describe_delegation_token.v2.request import (
        DescribeDelegationTokenRequest as DescribeDelegationTokenRequestV2,
    )
    from kio.schema.describe_delegation_token.v2.response import (
        DescribeDelegationTokenResponse as DescribeDelegationTokenResponseV2,
    )
    from kio.schema.describe_delegation_token.v3.request import (
        DescribeDelegationTokenRequest as DescribeDelegationTokenRequestV3,
    )
    from kio.schema.describe_delegation_token.v3.response import (
        DescribeDelegationTokenResponse as DescribeDelegationTokenResponseV3,
    )
    from kio.schema.describe_groups.v0.request import DescribeGroupsRequest as DescribeGroupsRequestV0
    from kio.schema.describe_groups.v0.response import DescribeGroupsResponse as DescribeGroupsResponseV0
    from kio.schema.describe_groups.v1.request import DescribeGroupsRequest as DescribeGroupsRequestV1
    from kio.schema.describe_groups.v1.response import DescribeGroupsResponse as DescribeGroupsResponseV1
    from kio.schema.describe_groups.v2.request import DescribeGroupsRequest as DescribeGroupsRequestV2
    from kio.schema.describe_groups.v2.response import DescribeGroupsResponse as DescribeGroupsResponseV2
    from kio.schema.describe_groups.v3.request import DescribeGroupsRequest as DescribeGroupsRequestV3
    from kio.schema.describe_groups.v3.response import DescribeGroupsResponse as DescribeGroupsResponseV3
    from kio.schema.describe_groups.v4.request import DescribeGroupsRequest as DescribeGroupsRequestV4
    from kio.schema.describe_groups.v4.response import DescribeGroupsResponse as DescribeGroupsResponseV4
    from kio.schema.describe_groups.v5.request import DescribeGroupsRequest as DescribeGroupsRequestV5
    from kio.schema.describe_groups.v5.response import DescribeGroupsResponse as DescribeGroupsResponseV5
    from kio.schema.describe_groups.v6.request import DescribeGroupsRequest as DescribeGroupsRequestV6
    from kio.schema.describe_groups.v6.response import DescribeGroupsResponse as DescribeGroupsResponseV6
    from kio.schema.describe_log_dirs.v1.request import DescribableLogDirTopic as DescribableLogDirTopicV1
    from kio.schema.describe_log_dirs.v1.request import DescribeLogDirsRequest as DescribeLogDirsRequestV1
    from kio.schema.describe_log_dirs.v1.response import DescribeLogDirsResponse as DescribeLogDirsResponseV1
    from kio.schema.describe_log_dirs.v2.request import DescribableLogDirTopic as DescribableLogDirTopicV2
    from kio.schema.describe_log_dirs.v2.request import DescribeLogDirsRequest as DescribeLogDirsRequestV2
    from kio.schema.describe_log_dirs.v2.response import DescribeLogDirsResponse as DescribeLogDirsResponseV2
    from kio.schema.describe_log_dirs.v3.request import DescribableLogDirTopic as DescribableLogDirTopicV3
    from kio.schema.describe_log_dirs.v3.request import DescribeLogDirsRequest as DescribeLogDirsRequestV3
    from kio.schema.describe_log_dirs.v3.response import DescribeLogDirsResponse as DescribeLogDirsResponseV3
    from kio.schema.describe_log_dirs.v4.request import DescribableLogDirTopic as DescribableLogDirTopicV4
    from kio.schema.describe_log_dirs.v4.request import DescribeLogDirsRequest as DescribeLogDirsRequestV4
    from kio.schema.describe_log_dirs.v4.response import DescribeLogDirsResponse as DescribeLogDirsResponseV4
    from kio.schema.describe_log_dirs.v5.request import DescribableLogDirTopic as DescribableLogDirTopicV5
    from kio.schema.describe_log_dirs.v5.request import DescribeLogDirsRequest as DescribeLogDirsRequestV5
    from kio.schema.describe_log_dirs.v5.response import DescribeLogDirsResponse as DescribeLogDirsResponseV5
    from kio.schema.describe_producers.v0.request import (
        DescribeProducersRequest as DescribeProducersRequestV0,
    )
    from kio.schema.describe_producers.v0.request import TopicRequest as DescribeProducersTopicRequestV0
    from kio.schema.describe_producers.v0.response import (
        DescribeProducersResponse as DescribeProducersResponseV0,
    )
    from kio.schema.describe_quorum.v0.request import DescribeQuorumRequest as DescribeQuorumRequestV0
    from kio.schema.describe_quorum.v0.response import DescribeQuorumResponse as DescribeQuorumResponseV0
    from kio.schema.describe_quorum.v1.request import DescribeQuorumRequest as DescribeQuorumRequestV1
    from kio.schema.describe_quorum.v1.response import DescribeQuorumResponse as DescribeQuorumResponseV1
    from kio.schema.describe_quorum.v2.request import DescribeQuorumRequest as DescribeQuorumRequestV2
    from kio.schema.describe_quorum.v2.response import DescribeQuorumResponse as DescribeQuorumResponseV2
    from kio.schema.describe_topic_partitions.v0.request import Cursor as CursorV0
    from kio.schema.describe_topic_partitions.v0.request import (
        DescribeTopicPartitionsRequest as DescribeTopicPartitionsRequestV0,
    )
    from kio.schema.describe_topic_partitions.v0.request import (
        TopicRequest as DescribeTopicPartitionsTopicRequestV0,
    )
    from kio.schema.describe_topic_partitions.v0.response import (
        DescribeTopicPartitionsResponse as DescribeTopicPartitionsResponseV0,
    )
    from kio.schema.describe_transactions.v0.request import (
        DescribeTransactionsRequest as DescribeTransactionsRequestV0,
    )
    from kio.schema.describe_transactions.v0.response import (
        DescribeTransactionsResponse as DescribeTransactionsResponseV0,
    )
    from kio.schema.describe_user_scram_credentials.v0.request import (
        DescribeUserScramCredentialsRequest as DescribeUserScramCredentialsRequestV0,
    )
    from kio.schema.describe_user_scram_credentials.v0.request import UserName as UserNameV0
    from kio.schema.describe_user_scram_credentials.v0.response import (
        DescribeUserScramCredentialsResponse as DescribeUserScramCredentialsResponseV0,
    )
    from kio.schema.elect_leaders.v0.request import ElectLeadersRequest as ElectLeadersRequestV0
    from kio.schema.elect_leaders.v0.request import TopicPartitions as TopicPartitionsV0
    from kio.schema.elect_leaders.v0.response import ElectLeadersResponse as ElectLeadersResponseV0
    from kio.schema.elect_leaders.v1.request import ElectLeadersRequest as ElectLeadersRequestV1
    from kio.schema.elect_leaders.v1.request import TopicPartitions as TopicPartitionsV1
    from kio.schema.elect_leaders.v1.response import ElectLeadersResponse as ElectLeadersResponseV1
    from kio.schema.elect_leaders.v2.request import ElectLeadersRequest as ElectLeadersRequestV2
    from kio.schema.elect_leaders.v2.request import TopicPartitions as TopicPartitionsV2
    from kio.schema.elect_leaders.v2.response import ElectLeadersResponse as ElectLeadersResponseV2
    from kio.schema.end_txn.v0.request import EndTxnRequest as EndTxnRequestV0
    from kio.schema.end_txn.v0.response import EndTxnResponse as EndTxnResponseV0
    from kio.schema.end_txn.v1.request import EndTxnRequest as EndTxnRequestV1
    from kio.schema.end_txn.v1.response import EndTxnResponse as EndTxnResponseV1
    from kio.schema.end_txn.v2.request import EndTxnRequest as EndTxnRequestV2
    from kio.schema.end_txn.v2.response import EndTxnResponse as EndTxnResponseV2
    from kio.schema.end_txn.v3.request import EndTxnRequest as EndTxnRequestV3
    from kio.schema.end_txn.v3.response import EndTxnResponse as EndTxnResponseV3
    from kio.schema.end_txn.v4.request import EndTxnRequest as EndTxnRequestV4
    from kio.schema.end_txn.v4.response import EndTxnResponse as EndTxnResponseV4
    from kio.schema.end_txn.v5.request import EndTxnRequest as EndTxnRequestV5
    from kio.schema.end_txn.v5.response import EndTxnResponse as EndTxnResponseV5
    from kio.schema.expire_delegation_token.v1.request import (
        ExpireDelegationTokenRequest as ExpireDelegationTokenRequestV1,
    )
    from kio.schema.expire_delegation_token.v1.response import (
        ExpireDelegationTokenResponse as ExpireDelegationTokenResponseV1,
    )
    from kio.schema.expire_delegation_token.v2.request import (
        ExpireDelegationTokenRequest as ExpireDelegationTokenRequestV2,
    )
    from kio.schema.expire_delegation_token.v2.response import (
        ExpireDelegationTokenResponse as ExpireDelegationTokenResponseV2,
    )
    from kio.schema.fetch.v4.request import FetchPartition as FetchPartitionV4
    from kio.schema.fetch.v4.request import FetchRequest as FetchRequestV4
    from kio.schema.fetch.v4.request import FetchTopic as FetchTopicV4
    from kio.schema.fetch.v4.response import FetchResponse as FetchResponseV4
    from kio.schema.fetch.v5.request import FetchPartition as FetchPartitionV5
    from kio.schema.fetch.v5.request import FetchRequest as FetchRequestV5
    from kio.schema.fetch.v5.request import FetchTopic as FetchTopicV5
    from kio.schema.fetch.v5.response import FetchResponse as FetchResponseV5
    from kio.schema.fetch.v6.request import FetchPartition as FetchPartitionV6
    from kio.schema.fetch.v6.request import FetchRequest as FetchRequestV6
    from kio.schema.fetch.v6.request import FetchTopic as FetchTopicV6
    from kio.schema.fetch.v6.response import FetchResponse as FetchResponseV6
    from kio.schema.fetch.v7.request import FetchPartition as FetchPartitionV7
    from kio.schema.fetch.v7.request import FetchRequest as FetchRequestV7
    from kio.schema.fetch.v7.request import FetchTopic as FetchTopicV7
    from kio.schema.fetch.v7.request import ForgottenTopic as ForgottenTopicV7
    from kio.schema.fetch.v7.response import FetchResponse as FetchResponseV7
    from kio.schema.fetch.v8.request import FetchPartition as FetchPartitionV8
    from kio.schema.fetch.v8.request import FetchRequest as FetchRequestV8
    from kio.schema.fetch.v8.request import FetchTopic as FetchTopicV8
    from kio.schema.fetch.v8.request import ForgottenTopic as ForgottenTopicV8
    from kio.schema.fetch.v8.response import FetchResponse as FetchResponseV8
    from kio.schema.fetch.v9.request import FetchPartition as FetchPartitionV9
    from kio.schema.fetch.v9.request import FetchRequest as FetchRequestV9
    from kio.schema.fetch.v9.request import FetchTopic as FetchTopicV9
    from kio.schema.fetch.v9.request import ForgottenTopic as ForgottenTopicV9
    from kio.schema.fetch.v9.response import FetchResponse as FetchResponseV9
    from kio.schema.fetch.v10.request import FetchPartition as FetchPartitionV10
    from kio.schema.fetch.v10.request import FetchRequest as FetchRequestV10
    from kio.schema.fetch.v10.request import FetchTopic as FetchTopicV10
    from kio.schema.fetch.v10.request import ForgottenTopic as ForgottenTopicV10
    from kio.schema.fetch.v10.response import FetchResponse as FetchResponseV10
    from kio.schema.fetch.v11.request import FetchPartition as FetchPartitionV11
    from kio.schema.fetch.v11.request import FetchRequest as FetchRequestV11
    from kio.schema.fetch.v11.request import FetchTopic as FetchTopicV11
    from kio.schema.fetch.v11.request import ForgottenTopic as ForgottenTopicV11
    from kio.schema.fetch.v11.response import FetchResponse as FetchResponseV11
    from kio.schema.fetch.v12.request import FetchPartition as FetchPartitionV12
    from kio.schema.fetch.v12.request import FetchRequest as FetchRequestV12
    from kio.schema.fetch.v12.request import FetchTopic as FetchTopicV12
    from kio.schema.fetch.v12.request import ForgottenTopic as ForgottenTopicV12
    from kio.schema.fetch.v12.response import FetchResponse as FetchResponseV12
    from kio.schema.fetch.v13.request import FetchPartition as FetchPartitionV13
    from kio.schema.fetch.v13.request import FetchRequest as FetchRequestV13
    from kio.schema.fetch.v13.request import FetchTopic as FetchTopicV13
    from kio.schema.fetch.v13.request import ForgottenTopic as ForgottenTopicV13
    from kio.schema.fetch.v13.response import FetchResponse as FetchResponseV13
    from kio.schema.fetch.v14.request import FetchPartition as FetchPartitionV14
    from kio.schema.fetch.v14.request import FetchRequest as FetchRequestV14
    from kio.schema.fetch.v14.request import FetchTopic as FetchTopicV14
    from kio.schema.fetch.v14.request import ForgottenTopic as ForgottenTopicV14
    from kio.schema.fetch.v14.response import FetchResponse as FetchResponseV14
    from kio.schema.fetch.v15.request import FetchPartition as FetchPartitionV15
    from kio.schema.fetch.v15.request import FetchRequest as FetchRequestV15
    from kio.schema.fetch.v15.request import FetchTopic as FetchTopicV15
    from kio.schema.fetch.v15.request import ForgottenTopic as ForgottenTopicV15
    from kio.schema.fetch.v15.response import FetchResponse as FetchResponseV15
    from kio.schema.fetch.v16.request import FetchPartition as FetchPartitionV16
    from kio.schema.fetch.v16.request import FetchRequest as FetchRequestV16
    from kio.schema.fetch.v16.request import FetchTopic as FetchTopicV16
    from kio.schema.fetch.v16.request import ForgottenTopic as ForgottenTopicV16
    from kio.schema.fetch.v16.response import FetchResponse as FetchResponseV16
    from kio.schema.fetch.v17.request import FetchPartition as FetchPartitionV17
    from kio.schema.fetch.v17.request import FetchRequest as FetchRequestV17
    from kio.schema.fetch.v17.request import FetchTopic as FetchTopicV17
    from kio.schema.fetch.v17.request import ForgottenTopic as ForgottenTopicV17
    from kio.schema.fetch.v17.response import FetchResponse as FetchResponseV17
    from kio.schema.fetch.v18.request import FetchPartition as FetchPartitionV18
    from kio.schema.fetch.v18.request import FetchRequest as FetchRequestV18
    from kio.schema.fetch.v18.request import FetchTopic as FetchTopicV18
    from kio.schema.fetch.v18.request import ForgottenTopic as ForgottenTopicV18
    from kio.schema.fetch.v18.response import FetchResponse as FetchResponseV18
    from kio.schema.find_coordinator.v0.request import FindCoordinatorRequest as FindCoordinatorRequestV0
    from kio.schema.find_coordinator.v0.response import FindCoordinatorResponse as FindCoordinatorResponseV0
    from kio.schema.find_coordinator.v1.request import FindCoordinatorRequest as FindCoordinatorRequestV1
    from kio.schema.find_coordinator.v1.response import FindCoordinatorResponse as FindCoordinatorResponseV1
    from kio.schema.find_coordinator.v2.request import FindCoordinatorRequest as FindCoordinatorRequestV2
    from kio.schema.find_coordinator.v2.response import FindCoordinatorResponse as FindCoordinatorResponseV2
    from kio.schema.find_coordinator.v3.request import FindCoordinatorRequest as FindCoordinatorRequestV3
    from kio.schema.find_coordinator.v3.response import FindCoordinatorResponse as FindCoordinatorResponseV3
    from kio.schema.find_coordinator.v4.request import FindCoordinatorRequest as FindCoordinatorRequestV4
    from kio.schema.find_coordinator.v4.response import FindCoordinatorResponse as FindCoordinatorResponseV4
    from kio.schema.find_coordinator.v5.request import FindCoordinatorRequest as FindCoordinatorRequestV5
    from kio.schema.find_coordinator.v5.response import FindCoordinatorResponse as FindCoordinatorResponseV5
    from kio.schema.find_coordinator.v6.request import FindCoordinatorRequest as FindCoordinatorRequestV6
    from kio.schema.find_coordinator.v6.response import FindCoordinatorResponse as FindCoordinatorResponseV6
    from kio.schema.get_telemetry_subscriptions.v0.request import (
        GetTelemetrySubscriptionsRequest as GetTelemetrySubscriptionsRequestV0,
    )
    from kio.schema.get_telemetry_subscriptions.v0.response import (
        GetTelemetrySubscriptionsResponse as GetTelemetrySubscriptionsResponseV0,
    )
    from kio.schema.heartbeat.v0.request import HeartbeatRequest as HeartbeatRequestV0
    from kio.schema.heartbeat.v0.response import HeartbeatResponse as HeartbeatResponseV0
    from kio.schema.heartbeat.v1.request import HeartbeatRequest as HeartbeatRequestV1
    from kio.schema.heartbeat.v1.response import HeartbeatResponse as HeartbeatResponseV1
    from kio.schema.heartbeat.v2.request import HeartbeatRequest as HeartbeatRequestV2
    from kio.schema.heartbeat.v2.response import HeartbeatResponse as HeartbeatResponseV2
    from kio.schema.heartbeat.v3.request import HeartbeatRequest as HeartbeatRequestV3
    from kio.schema.heartbeat.v3.response import HeartbeatResponse as HeartbeatResponseV3
    from kio.schema.heartbeat.v4.request import HeartbeatRequest as HeartbeatRequestV4
    from kio.schema.heartbeat.v4.response import HeartbeatResponse as HeartbeatResponseV4
    from kio.schema.incremental_alter_configs.v0.request import (
        AlterableConfig as IncrementalAlterConfigsAlterableConfigV0,
    )
    from kio.schema.incremental_alter_configs.v0.request import (
        AlterConfigsResource as IncrementalAlterConfigsAlterConfigsResourceV0,
    )
    from kio.schema.incremental_alter_configs.v0.request import (
        IncrementalAlterConfigsRequest as IncrementalAlterConfigsRequestV0,
    )
    from kio.schema.incremental_alter_configs.v0.response import (
        IncrementalAlterConfigsResponse as IncrementalAlterConfigsResponseV0,
    )
    from kio.schema.incremental_alter_configs.v1.request import (
        AlterableConfig as IncrementalAlterConfigsAlterableConfigV1,
    )
    from kio.schema.incremental_alter_configs.v1.request import (
        AlterConfigsResource as IncrementalAlterConfigsAlterConfigsResourceV1,
    )
    from kio.schema.incremental_alter_configs.v1.request import (
        IncrementalAlterConfigsRequest as IncrementalAlterConfigsRequestV1,
    )
    from kio.schema.incremental_alter_configs.v1.response import (
        IncrementalAlterConfigsResponse as IncrementalAlterConfigsResponseV1,
    )
    from kio.schema.init_producer_id.v0.request import InitProducerIdRequest as InitProducerIdRequestV0
    from kio.schema.init_producer_id.v0.response import InitProducerIdResponse as InitProducerIdResponseV0
    from kio.schema.init_producer_id.v1.request import InitProducerIdRequest as InitProducerIdRequestV1
    from kio.schema.init_producer_id.v1.response import InitProducerIdResponse as InitProducerIdResponseV1
    from kio.schema.init_producer_id.v2.request import InitProducerIdRequest as InitProducerIdRequestV2
    from kio.schema.init_producer_id.v2.response import InitProducerIdResponse as InitProducerIdResponseV2
    from kio.schema.init_producer_id.v3.request import InitProducerIdRequest as InitProducerIdRequestV3
    from kio.schema.init_producer_id.v3.response import InitProducerIdResponse as InitProducerIdResponseV3
    from kio.schema.init_producer_id.v4.request import InitProducerIdRequest as InitProducerIdRequestV4
    from kio.schema.init_producer_id.v4.response import InitProducerIdResponse as InitProducerIdResponseV4
    from kio.schema.init_producer_id.v5.request import InitProducerIdRequest as InitProducerIdRequestV5
    from kio.schema.init_producer_id.v5.response import InitProducerIdResponse as InitProducerIdResponseV5
    from kio.schema.join_group.v0.request import JoinGroupRequest as JoinGroupRequestV0
    from kio.schema.join_group.v0.request import JoinGroupRequestProtocol as JoinGroupRequestProtocolV0
    from kio.schema.join_group.v0.response import JoinGroupResponse as JoinGroupResponseV0
    from kio.schema.join_group.v1.request import JoinGroupRequest as JoinGroupRequestV1
    from kio.schema.join_group.v1.request import JoinGroupRequestProtocol as JoinGroupRequestProtocolV1
    from kio.schema.join_group.v1.response import JoinGroupResponse as JoinGroupResponseV1
    from kio.schema.join_group.v2.request import JoinGroupRequest as JoinGroupRequestV2
    from kio.schema.join_group.v2.request import JoinGroupRequestProtocol as JoinGroupRequestProtocolV2
    from kio.schema.join_group.v2.response import JoinGroupResponse as JoinGroupResponseV2
    from kio.schema.join_group.v3.request import JoinGroupRequest as JoinGroupRequestV3
    from kio.schema.join_group.v3.request import JoinGroupRequestProtocol as JoinGroupRequestProtocolV3
    from kio.schema.join_group.v3.response import JoinGroupResponse as JoinGroupResponseV3
    from kio.schema.join_group.v4.request import JoinGroupRequest as JoinGroupRequestV4
    from kio.schema.join_group.v4.request import JoinGroupRequestProtocol as JoinGroupRequestProtocolV4
    from kio.schema.join_group.v4.response import JoinGroupResponse as JoinGroupResponseV4
    from kio.schema.join_group.v5.request import JoinGroupRequest as JoinGroupRequestV5
    from kio.schema.join_group.v5.request import JoinGroupRequestProtocol as JoinGroupRequestProtocolV5
    from kio.schema.join_group.v5.response import JoinGroupResponse as JoinGroupResponseV5
    from kio.schema.join_group.v6.request import JoinGroupRequest as JoinGroupRequestV6
    from kio.schema.join_group.v6.request import JoinGroupRequestProtocol as JoinGroupRequestProtocolV6
    from kio.schema.join_group.v6.response import JoinGroupResponse as JoinGroupResponseV6
    from kio.schema.join_group.v7.request import JoinGroupRequest as JoinGroupRequestV7
    from kio.schema.join_group.v7.request import JoinGroupRequestProtocol as JoinGroupRequestProtocolV7
    from kio.schema.join_group.v7.response import JoinGroupResponse as JoinGroupResponseV7
    from kio.schema.join_group.v8.request import JoinGroupRequest as JoinGroupRequestV8
    from kio.schema.join_group.v8.request import JoinGroupRequestProtocol as JoinGroupRequestProtocolV8
    from kio.schema.join_group.v8.response import JoinGroupResponse as JoinGroupResponseV8
    from kio.schema.join_group.v9.request import JoinGroupRequest as JoinGroupRequestV9
    from kio.schema.join_group.v9.request import JoinGroupRequestProtocol as JoinGroupRequestProtocolV9
    from kio.schema.join_group.v9.response import JoinGroupResponse as JoinGroupResponseV9
    from kio.schema.leave_group.v0.request import LeaveGroupRequest as LeaveGroupRequestV0
    from kio.schema.leave_group.v0.response import LeaveGroupResponse as LeaveGroupResponseV0
    from kio.schema.leave_group.v1.request import LeaveGroupRequest as LeaveGroupRequestV1
    from kio.schema.leave_group.v1.response import LeaveGroupResponse as LeaveGroupResponseV1
    from kio.schema.leave_group.v2.request import LeaveGroupRequest as LeaveGroupRequestV2
    from kio.schema.leave_group.v2.response import LeaveGroupResponse as LeaveGroupResponseV2
    from kio.schema.leave_group.v3.request import LeaveGroupRequest as LeaveGroupRequestV3
    from kio.schema.leave_group.v3.request import MemberIdentity as MemberIdentityV3
    from kio.schema.leave_group.v3.response import LeaveGroupResponse as LeaveGroupResponseV3
    from kio.schema.leave_group.v4.request import LeaveGroupRequest as LeaveGroupRequestV4
    from kio.schema.leave_group.v4.request import MemberIdentity as MemberIdentityV4
    from kio.schema.leave_group.v4.response import LeaveGroupResponse as LeaveGroupResponseV4
    from kio.schema.leave_group.v5.request import LeaveGroupRequest as LeaveGroupRequestV5
    from kio.schema.leave_group.v5.request import MemberIdentity as MemberIdentityV5
    from kio.schema.leave_group.v5.response import LeaveGroupResponse as LeaveGroupResponseV5
    from kio.schema.list_config_resources.v0.request import (
        ListConfigResourcesRequest as ListConfigResourcesRequestV0,
    )
    from kio.schema.list_config_resources.v0.response import (
        ListConfigResourcesResponse as ListConfigResourcesResponseV0,
    )
    from kio.schema.list_config_resources.v1.request import (
        ListConfigResourcesRequest as ListConfigResourcesRequestV1,
    )
    from kio.schema.list_config_resources.v1.response import (
        ListConfigResourcesResponse as ListConfigResourcesResponseV1,
    )
    from kio.schema.list_groups.v0.request import ListGroupsRequest as ListGroupsRequestV0
    from kio.schema.list_groups.v0.response import ListGroupsResponse as ListGroupsResponseV0
    from kio.schema.list_groups.v1.request import ListGroupsRequest as ListGroupsRequestV1
    from kio.schema.list_groups.v1.response import ListGroupsResponse as ListGroupsResponseV1
    from kio.schema.list_groups.v2.request import ListGroupsRequest as ListGroupsRequestV2
    from kio.schema.list_groups.v2.response import ListGroupsResponse as ListGroupsResponseV2
    from kio.schema.list_groups.v3.request import ListGroupsRequest as ListGroupsRequestV3
    from kio.schema.list_groups.v3.response import ListGroupsResponse as ListGroupsResponseV3
    from kio.schema.list_groups.v4.request import ListGroupsRequest as ListGroupsRequestV4
    from kio.schema.list_groups.v4.response import ListGroupsResponse as ListGroupsResponseV4
    from kio.schema.list_groups.v5.request import ListGroupsRequest as ListGroupsRequestV5
    from kio.schema.list_groups.v5.response import ListGroupsResponse as ListGroupsResponseV5
    from kio.schema.list_offsets.v1.request import ListOffsetsPartition as ListOffsetsPartitionV1
    from kio.schema.list_offsets.v1.request import ListOffsetsRequest as ListOffsetsRequestV1
    from kio.schema.list_offsets.v1.request import ListOffsetsTopic as ListOffsetsTopicV1
    from kio.schema.list_offsets.v1.response import ListOffsetsResponse as ListOffsetsResponseV1
    from kio.schema.list_offsets.v2.request import ListOffsetsPartition as ListOffsetsPartitionV2
    from kio.schema.list_offsets.v2.request import ListOffsetsRequest as ListOffsetsRequestV2
    from kio.schema.list_offsets.v2.request import ListOffsetsTopic as ListOffsetsTopicV2
    from kio.schema.list_offsets.v2.response import ListOffsetsResponse as ListOffsetsResponseV2
    from kio.schema.list_offsets.v3.request import ListOffsetsPartition as ListOffsetsPartitionV3
    from kio.schema.list_offsets.v3.request import ListOffsetsRequest as ListOffsetsRequestV3
    from kio.schema.list_offsets.v3.request import ListOffsetsTopic as ListOffsetsTopicV3
    from kio.schema.list_offsets.v3.response import ListOffsetsResponse as ListOffsetsResponseV3
    from kio.schema.list_offsets.v4.request import ListOffsetsPartition as ListOffsetsPartitionV4
    from kio.schema.list_offsets.v4.request import ListOffsetsRequest as ListOffsetsRequestV4
    from kio.schema.list_offsets.v4.request import ListOffsetsTopic as ListOffsetsTopicV4
    from kio.schema.list_offsets.v4.response import ListOffsetsResponse as ListOffsetsResponseV4
    from kio.schema.list_offsets.v5.request import ListOffsetsPartition as ListOffsetsPartitionV5
    from kio.schema.list_offsets.v5.request import ListOffsetsRequest as ListOffsetsRequestV5
    from kio.schema.list_offsets.v5.request import ListOffsetsTopic as ListOffsetsTopicV5
    from kio.schema.list_offsets.v5.response import ListOffsetsResponse as ListOffsetsResponseV5
    from kio.schema.list_offsets.v6.request import ListOffsetsPartition as ListOffsetsPartitionV6
    from kio.schema.list_offsets.v6.request import ListOffsetsRequest as ListOffsetsRequestV6
    from kio.schema.list_offsets.v6.request import ListOffsetsTopic as ListOffsetsTopicV6
    from kio.schema.list_offsets.v6.response import ListOffsetsResponse as ListOffsetsResponseV6
    from kio.schema.list_offsets.v7.request import ListOffsetsPartition as ListOffsetsPartitionV7
    from kio.schema.list_offsets.v7.request import ListOffsetsRequest as ListOffsetsRequestV7
    from kio.schema.list_offsets.v7.request import ListOffsetsTopic as ListOffsetsTopicV7
    from kio.schema.list_offsets.v7.response import ListOffsetsResponse as ListOffsetsResponseV7
    from kio.schema.list_offsets.v8.request import ListOffsetsPartition as ListOffsetsPartitionV8
    from kio.schema.list_offsets.v8.request import ListOffsetsRequest as ListOffsetsRequestV8
    from kio.schema.list_offsets.v8.request import ListOffsetsTopic as ListOffsetsTopicV8
    from kio.schema.list_offsets.v8.response import ListOffsetsResponse as ListOffsetsResponseV8
    from kio.schema.list_offsets.v9.request import ListOffsetsPartition as ListOffsetsPartitionV9
    from kio.schema.list_offsets.v9.request import ListOffsetsRequest as ListOffsetsRequestV9
    from kio.schema.list_offsets.v9.request import ListOffsetsTopic as ListOffsetsTopicV9
    from kio.schema.list_offsets.v9.response import ListOffsetsResponse as ListOffsetsResponseV9
    from kio.schema.list_offsets.v10.request import ListOffsetsPartition as ListOffsetsPartitionV10
    from kio.schema.list_offsets.v10.request import ListOffsetsRequest as ListOffsetsRequestV10
    from kio.schema.list_offsets.v10.request import ListOffsetsTopic as ListOffsetsTopicV10
    from kio.schema.list_offsets.v10.response import ListOffsetsResponse as ListOffsetsResponseV10
    from kio.schema.list_offsets.v11.request import ListOffsetsPartition as ListOffsetsPartitionV11
    from kio.schema.list_offsets.v11.request import ListOffsetsRequest as ListOffsetsRequestV11
    from kio.schema.list_offsets.v11.request import ListOffsetsTopic as ListOffsetsTopicV11
    from kio.schema.list_offsets.v11.response import ListOffsetsResponse as ListOffsetsResponseV11
    from kio.schema.list_partition_reassignments.v0.request import (
        ListPartitionReassignmentsRequest as ListPartitionReassignmentsRequestV0,
    )
    from kio.schema.list_partition_reassignments.v0.response import (
        ListPartitionReassignmentsResponse as ListPartitionReassignmentsResponseV0,
    )
    from kio.schema.list_transactions.v0.request import ListTransactionsRequest as ListTransactionsRequestV0
    from kio.schema.list_transactions.v0.response import (
        ListTransactionsResponse as ListTransactionsResponseV0,
    )
    from kio.schema.list_transactions.v1.request import ListTransactionsRequest as ListTransactionsRequestV1
    from kio.schema.list_transactions.v1.response import (
        ListTransactionsResponse as ListTransactionsResponseV1,
    )
    from kio.schema.list_transactions.v2.request import ListTransactionsRequest as ListTransactionsRequestV2
    from kio.schema.list_transactions.v2.response import (
        ListTransactionsResponse as ListTransactionsResponseV2,
    )
    from kio.schema.metadata.v0.request import MetadataRequest as MetadataRequestV0
    from kio.schema.metadata.v0.request import MetadataRequestTopic as MetadataRequestTopicV0
    from kio.schema.metadata.v0.response import MetadataResponse as MetadataResponseV0
    from kio.schema.metadata.v1.request import MetadataRequest as MetadataRequestV1
    from kio.schema.metadata.v1.request import MetadataRequestTopic as MetadataRequestTopicV1
    from kio.schema.metadata.v1.response import MetadataResponse as MetadataResponseV1
    from kio.schema.metadata.v2.request import MetadataRequest as MetadataRequestV2
    from kio.schema.metadata.v2.request import MetadataRequestTopic as MetadataRequestTopicV2
    from kio.schema.metadata.v2.response import MetadataResponse as MetadataResponseV2
    from kio.schema.metadata.v3.request import MetadataRequest as MetadataRequestV3
    from kio.schema.metadata.v3.request import MetadataRequestTopic as MetadataRequestTopicV3
    from kio.schema.metadata.v3.response import MetadataResponse as MetadataResponseV3
    from kio.schema.metadata.v4.request import MetadataRequest as MetadataRequestV4
    from kio.schema.metadata.v4.request import MetadataRequestTopic as MetadataRequestTopicV4
    from kio.schema.metadata.v4.response import MetadataResponse as MetadataResponseV4
    from kio.schema.metadata.v5.request import MetadataRequest as MetadataRequestV5
    from kio.schema.metadata.v5.request import MetadataRequestTopic as MetadataRequestTopicV5
    from kio.schema.metadata.v5.response import MetadataResponse as MetadataResponseV5
    from kio.schema.metadata.v6.request import MetadataRequest as MetadataRequestV6
    from kio.schema.metadata.v6.request import MetadataRequestTopic as MetadataRequestTopicV6
    from kio.schema.metadata.v6.response import MetadataResponse as MetadataResponseV6
    from kio.schema.metadata.v7.request import MetadataRequest as MetadataRequestV7
    from kio.schema.metadata.v7.request import MetadataRequestTopic as MetadataRequestTopicV7
    from kio.schema.metadata.v7.response import MetadataResponse as MetadataResponseV7
    from kio.schema.metadata.v8.request import MetadataRequest as MetadataRequestV8
    from kio.schema.metadata.v8.request import MetadataRequestTopic as MetadataRequestTopicV8
    from kio.schema.metadata.v8.response import MetadataResponse as MetadataResponseV8
    from kio.schema.metadata.v9.request import MetadataRequest as MetadataRequestV9
    from kio.schema.metadata.v9.request import MetadataRequestTopic as MetadataRequestTopicV9
    from kio.schema.metadata.v9.response import MetadataResponse as MetadataResponseV9
    from kio.schema.metadata.v10.request import MetadataRequest as MetadataRequestV10
    from kio.schema.metadata.v10.request import MetadataRequestTopic as MetadataRequestTopicV10
    from kio.schema.metadata.v10.response import MetadataResponse as MetadataResponseV10
    from kio.schema.metadata.v11.request import MetadataRequest as MetadataRequestV11
    from kio.schema.metadata.v11.request import MetadataRequestTopic as MetadataRequestTopicV11
    from kio.schema.metadata.v11.response import MetadataResponse as MetadataResponseV11
    from kio.schema.metadata.v12.request import MetadataRequest as MetadataRequestV12
    from kio.schema.metadata.v12.request import MetadataRequestTopic as MetadataRequestTopicV12
    from kio.schema.metadata.v12.response import MetadataResponse as MetadataResponseV12
    from kio.schema.metadata.v13.request import MetadataRequest as MetadataRequestV13
    from kio.schema.metadata.v13.request import MetadataRequestTopic as MetadataRequestTopicV13
    from kio.schema.metadata.v13.response import MetadataResponse as MetadataResponseV13
    from kio.schema.offset_commit.v2.request import OffsetCommitRequest as OffsetCommitRequestV2
    from kio.schema.offset_commit.v2.request import (
        OffsetCommitRequestPartition as OffsetCommitRequestPartitionV2,
    )
    from kio.schema.offset_commit.v2.request import OffsetCommitRequestTopic as OffsetCommitRequestTopicV2
    from kio.schema.offset_commit.v2.response import OffsetCommitResponse as OffsetCommitResponseV2
    from kio.schema.offset_commit.v3.request import OffsetCommitRequest as OffsetCommitRequestV3
    from kio.schema.offset_commit.v3.request import (
        OffsetCommitRequestPartition as OffsetCommitRequestPartitionV3,
    )
    from kio.schema.offset_commit.v3.request import OffsetCommitRequestTopic as OffsetCommitRequestTopicV3
    from kio.schema.offset_commit.v3.response import OffsetCommitResponse as OffsetCommitResponseV3
    from kio.schema.offset_commit.v4.request import OffsetCommitRequest as OffsetCommitRequestV4
    from kio.schema.offset_commit.v4.request import (
        OffsetCommitRequestPartition as OffsetCommitRequestPartitionV4,
    )
    from kio.schema.offset_commit.v4.request import OffsetCommitRequestTopic as OffsetCommitRequestTopicV4
    from kio.schema.offset_commit.v4.response import OffsetCommitResponse as OffsetCommitResponseV4
    from kio.schema.offset_commit.v5.request import OffsetCommitRequest as OffsetCommitRequestV5
    from kio.schema.offset_commit.v5.request import (
        OffsetCommitRequestPartition as OffsetCommitRequestPartitionV5,
    )
    from kio.schema.offset_commit.v5.request import OffsetCommitRequestTopic as OffsetCommitRequestTopicV5
    from kio.schema.offset_commit.v5.response import OffsetCommitResponse as OffsetCommitResponseV5
    from kio.schema.offset_commit.v6.request import OffsetCommitRequest as OffsetCommitRequestV6
    from kio.schema.offset_commit.v6.request import (
        OffsetCommitRequestPartition as OffsetCommitRequestPartitionV6,
    )
    from kio.schema.offset_commit.v6.request import OffsetCommitRequestTopic as OffsetCommitRequestTopicV6
    from kio.schema.offset_commit.v6.response import OffsetCommitResponse as OffsetCommitResponseV6
    from kio.schema.offset_commit.v7.request import OffsetCommitRequest as OffsetCommitRequestV7
    from kio.schema.offset_commit.v7.request import (
        OffsetCommitRequestPartition as OffsetCommitRequestPartitionV7,
    )
    from kio.schema.offset_commit.v7.request import OffsetCommitRequestTopic as OffsetCommitRequestTopicV7
    from kio.schema.offset_commit.v7.response import OffsetCommitResponse as OffsetCommitResponseV7
    from kio.schema.offset_commit.v8.request import OffsetCommitRequest as OffsetCommitRequestV8
    from kio.schema.offset_commit.v8.request import (
        OffsetCommitRequestPartition as OffsetCommitRequestPartitionV8,
    )
    from kio.schema.offset_commit.v8.request import OffsetCommitRequestTopic as OffsetCommitRequestTopicV8
    from kio.schema.offset_commit.v8.response import OffsetCommitResponse as OffsetCommitResponseV8
    from kio.schema.offset_commit.v9.request import OffsetCommitRequest as OffsetCommitRequestV9
    from kio.schema.offset_commit.v9.request import (
        OffsetCommitRequestPartition as OffsetCommitRequestPartitionV9,
    )
    from kio.schema.offset_commit.v9.request import OffsetCommitRequestTopic as OffsetCommitRequestTopicV9
    from kio.schema.offset_commit.v9.response import OffsetCommitResponse as OffsetCommitResponseV9
    from kio.schema.offset_commit.v10.request import OffsetCommitRequest as OffsetCommitRequestV10
    from kio.schema.offset_commit.v10.request import (
        OffsetCommitRequestPartition as OffsetCommitRequestPartitionV10,
    )
    from kio.schema.offset_commit.v10.request import OffsetCommitRequestTopic as OffsetCommitRequestTopicV10
    from kio.schema.offset_commit.v10.response import OffsetCommitResponse as OffsetCommitResponseV10
    from kio.schema.offset_delete.v0.request import OffsetDeleteRequest as OffsetDeleteRequestV0
    from kio.schema.offset_delete.v0.request import (
        OffsetDeleteRequestPartition as OffsetDeleteRequestPartitionV0,
    )
    from kio.schema.offset_delete.v0.request import OffsetDeleteRequestTopic as OffsetDeleteRequestTopicV0
    from kio.schema.offset_delete.v0.response import OffsetDeleteResponse as OffsetDeleteResponseV0
    from kio.schema.offset_fetch.v1.request import OffsetFetchRequest as OffsetFetchRequestV1
    from kio.schema.offset_fetch.v1.request import OffsetFetchRequestTopic as OffsetFetchRequestTopicV1
    from kio.schema.offset_fetch.v1.response import OffsetFetchResponse as OffsetFetchResponseV1
    from kio.schema.offset_fetch.v2.request import OffsetFetchRequest as OffsetFetchRequestV2
    from kio.schema.offset_fetch.v2.request import OffsetFetchRequestTopic as OffsetFetchRequestTopicV2
    from kio.schema.offset_fetch.v2.response import OffsetFetchResponse as OffsetFetchResponseV2
    from kio.schema.offset_fetch.v3.request import OffsetFetchRequest as OffsetFetchRequestV3
    from kio.schema.offset_fetch.v3.request import OffsetFetchRequestTopic as OffsetFetchRequestTopicV3
    from kio.schema.offset_fetch.v3.response import OffsetFetchResponse as OffsetFetchResponseV3
    from kio.schema.offset_fetch.v4.request import OffsetFetchRequest as OffsetFetchRequestV4
    from kio.schema.offset_fetch.v4.request import OffsetFetchRequestTopic as OffsetFetchRequestTopicV4
    from kio.schema.offset_fetch.v4.response import OffsetFetchResponse as OffsetFetchResponseV4
    from kio.schema.offset_fetch.v5.request import OffsetFetchRequest as OffsetFetchRequestV5
    from kio.schema.offset_fetch.v5.request import OffsetFetchRequestTopic as OffsetFetchRequestTopicV5
    from kio.schema.offset_fetch.v5.response import OffsetFetchResponse as OffsetFetchResponseV5
    from kio.schema.offset_fetch.v6.request import OffsetFetchRequest as OffsetFetchRequestV6
    from kio.schema.offset_fetch.v6.request import OffsetFetchRequestTopic as OffsetFetchRequestTopicV6
    from kio.schema.offset_fetch.v6.response import OffsetFetchResponse as OffsetFetchResponseV6
    from kio.schema.offset_fetch.v7.request import OffsetFetchRequest as OffsetFetchRequestV7
    from kio.schema.offset_fetch.v7.request import OffsetFetchRequestTopic as OffsetFetchRequestTopicV7
    from kio.schema.offset_fetch.v7.response import OffsetFetchResponse as OffsetFetchResponseV7
    from kio.schema.offset_fetch.v8.request import OffsetFetchRequest as OffsetFetchRequestV8
    from kio.schema.offset_fetch.v8.request import OffsetFetchRequestGroup as OffsetFetchRequestGroupV8
    from kio.schema.offset_fetch.v8.request import OffsetFetchRequestTopics as OffsetFetchRequestTopicsV8
    from kio.schema.offset_fetch.v8.response import OffsetFetchResponse as OffsetFetchResponseV8
    from kio.schema.offset_fetch.v9.request import OffsetFetchRequest as OffsetFetchRequestV9
    from kio.schema.offset_fetch.v9.request import OffsetFetchRequestGroup as OffsetFetchRequestGroupV9
    from kio.schema.offset_fetch.v9.request import OffsetFetchRequestTopics as OffsetFetchRequestTopicsV9
    from kio.schema.offset_fetch.v9.response import OffsetFetchResponse as OffsetFetchResponseV9
    from kio.schema.offset_fetch.v10.request import OffsetFetchRequest as OffsetFetchRequestV10
    from kio.schema.offset_fetch.v10.request import OffsetFetchRequestGroup as OffsetFetchRequestGroupV10
    from kio.schema.offset_fetch.v10.request import OffsetFetchRequestTopics as OffsetFetchRequestTopicsV10
    from kio.schema.offset_fetch.v10.response import OffsetFetchResponse as OffsetFetchResponseV10
    from kio.schema.offset_for_leader_epoch.v2.request import (
        OffsetForLeaderEpochRequest as OffsetForLeaderEpochRequestV2,
    )
    from kio.schema.offset_for_leader_epoch.v2.request import (
        OffsetForLeaderPartition as OffsetForLeaderPartitionV2,
    )
    from kio.schema.offset_for_leader_epoch.v2.request import OffsetForLeaderTopic as OffsetForLeaderTopicV2
    from kio.schema.offset_for_leader_epoch.v2.response import (
        OffsetForLeaderEpochResponse as OffsetForLeaderEpochResponseV2,
    )
    from kio.schema.offset_for_leader_epoch.v3.request import (
        OffsetForLeaderEpochRequest as OffsetForLeaderEpochRequestV3,
    )
    from kio.schema.offset_for_leader_epoch.v3.request import (
        OffsetForLeaderPartition as OffsetForLeaderPartitionV3,
    )
    from kio.schema.offset_for_leader_epoch.v3.request import OffsetForLeaderTopic as OffsetForLeaderTopicV3
    from kio.schema.offset_for_leader_epoch.v3.response import (
        OffsetForLeaderEpochResponse as OffsetForLeaderEpochResponseV3,
    )
    from kio.schema.offset_for_leader_epoch.v4.request import (
        OffsetForLeaderEpochRequest as OffsetForLeaderEpochRequestV4,
    )
    from kio.schema.offset_for_leader_epoch.v4.request import (
        OffsetForLeaderPartition as OffsetForLeaderPartitionV4,
    )
    from kio.schema.offset_for_leader_epoch.v4.request import OffsetForLeaderTopic as OffsetForLeaderTopicV4
    from kio.schema.offset_for_leader_epoch.v4.response import (
        OffsetForLeaderEpochResponse as OffsetForLeaderEpochResponseV4,
    )
    from kio.schema.produce.v3.request import PartitionProduceData as PartitionProduceDataV3
    from kio.schema.produce.v3.request import ProduceRequest as ProduceRequestV3
    from kio.schema.produce.v3.request import TopicProduceData as TopicProduceDataV3
    from kio.schema.produce.v3.response import ProduceResponse as ProduceResponseV3
    from kio.schema.produce.v4.request import PartitionProduceData as PartitionProduceDataV4
    from kio.schema.produce.v4.request import ProduceRequest as ProduceRequestV4
    from kio.schema.produce.v4.request import TopicProduceData as TopicProduceDataV4
    from kio.schema.produce.v4.response import ProduceResponse as ProduceResponseV4
    from kio.schema.produce.v5.request import PartitionProduceData as PartitionProduceDataV5
    from kio.schema.produce.v5.request import ProduceRequest as ProduceRequestV5
    from kio.schema.produce.v5.request import TopicProduceData as TopicProduceDataV5
    from kio.schema.produce.v5.response import ProduceResponse as ProduceResponseV5
    from kio.schema.produce.v6.request import PartitionProduceData as PartitionProduceDataV6
    from kio.schema.produce.v6.request import ProduceRequest as ProduceRequestV6
    from kio.schema.produce.v6.request import TopicProduceData as TopicProduceDataV6
    from kio.schema.produce.v6.response import ProduceResponse as ProduceResponseV6
    from kio.schema.produce.v7.request import PartitionProduceData as PartitionProduceDataV7
    from kio.schema.produce.v7.request import ProduceRequest as ProduceRequestV7
    from kio.schema.produce.v7.request import TopicProduceData as TopicProduceDataV7
    from kio.schema.produce.v7.response import ProduceResponse as ProduceResponseV7
    from kio.schema.produce.v8.request import PartitionProduceData as PartitionProduceDataV8
    from kio.schema.produce.v8.request import ProduceRequest as ProduceRequestV8
    from kio.schema.produce.v8.request import TopicProduceData as TopicProduceDataV8
    from kio.schema.produce.v8.response import ProduceResponse as ProduceResponseV8
    from kio.schema.produce.v9.request import PartitionProduceData as PartitionProduceDataV9
    from kio.schema.produce.v9.request import ProduceRequest as ProduceRequestV9
    from kio.schema.produce.v9.request import TopicProduceData as TopicProduceDataV9
    from kio.schema.produce.v9.response import ProduceResponse as ProduceResponseV9
    from kio.schema.produce.v10.request import PartitionProduceData as PartitionProduceDataV10
    from kio.schema.produce.v10.request import ProduceRequest as ProduceRequestV10
    from kio.schema.produce.v10.request import TopicProduceData as TopicProduceDataV10
    from kio.schema.produce.v10.response import ProduceResponse as ProduceResponseV10
    from kio.schema.produce.v11.request import PartitionProduceData as PartitionProduceDataV11
    from kio.schema.produce.v11.request import ProduceRequest as ProduceRequestV11
    from kio.schema.produce.v11.request import TopicProduceData as TopicProduceDataV11
    from kio.schema.produce.v11.response import ProduceResponse as ProduceResponseV11
    from kio.schema.produce.v12.request import PartitionProduceData as PartitionProduceDataV12
    from kio.schema.produce.v12.request import ProduceRequest as ProduceRequestV12
    from kio.schema.produce.v12.request import TopicProduceData as TopicProduceDataV12
    from kio.schema.produce.v12.response import ProduceResponse as ProduceResponseV12
    from kio.schema.produce.v13.request import PartitionProduceData as PartitionProduceDataV13
    from kio.schema.produce.v13.request import ProduceRequest as ProduceRequestV13
    from kio.schema.produce.v13.request import TopicProduceData as TopicProduceDataV13
    from kio.schema.produce.v13.response import ProduceResponse as ProduceResponseV13
    from kio.schema.push_telemetry.v0.request import PushTelemetryRequest as PushTelemetryRequestV0
    from kio.schema.push_telemetry.v0.response import PushTelemetryResponse as PushTelemetryResponseV0
    from kio.schema.remove_raft_voter.v0.request import RemoveRaftVoterRequest as RemoveRaftVoterRequestV0
    from kio.schema.remove_raft_voter.v0.response import RemoveRaftVoterResponse as RemoveRaftVoterResponseV0
    from kio.schema.renew_delegation_token.v1.request import (
        RenewDelegationTokenRequest as RenewDelegationTokenRequestV1,
    )
    from kio.schema.renew_delegation_token.v1.response import (
        RenewDelegationTokenResponse as RenewDelegationTokenResponseV1,
    )
    from kio.schema.renew_delegation_token.v2.request import (
        RenewDelegationTokenRequest as RenewDelegationTokenRequestV2,
    )
    from kio.schema.renew_delegation_token.v2.response import (
        RenewDelegationTokenResponse as RenewDelegationTokenResponseV2,
    )
    from kio.schema.sasl_authenticate.v0.request import SaslAuthenticateRequest as SaslAuthenticateRequestV0
    from kio.schema.sasl_authenticate.v0.response import (
        SaslAuthenticateResponse as SaslAuthenticateResponseV0,
    )
    from kio.schema.sasl_authenticate.v1.request import SaslAuthenticateRequest as SaslAuthenticateRequestV1
    from kio.schema.sasl_authenticate.v1.response import (
        SaslAuthenticateResponse as SaslAuthenticateResponseV1,
    )
    from kio.schema.sasl_authenticate.v2.request import SaslAuthenticateRequest as SaslAuthenticateRequestV2
    from kio.schema.sasl_authenticate.v2.response import (
        SaslAuthenticateResponse as SaslAuthenticateResponseV2,
    )
    from kio.schema.sasl_handshake.v0.request import SaslHandshakeRequest as SaslHandshakeRequestV0
    from kio.schema.sasl_handshake.v0.response import SaslHandshakeResponse as SaslHandshakeResponseV0
    from kio.schema.sasl_handshake.v1.request import SaslHandshakeRequest as SaslHandshakeRequestV1
    from kio.schema.sasl_handshake.v1.response import SaslHandshakeResponse as SaslHandshakeResponseV1
    from kio.schema.sync_group.v0.request import SyncGroupRequest as SyncGroupRequestV0
    from kio.schema.sync_group.v0.request import SyncGroupRequestAssignment as SyncGroupRequestAssignmentV0
    from kio.schema.sync_group.v0.response import SyncGroupResponse as SyncGroupResponseV0
    from kio.schema.sync_group.v1.request import SyncGroupRequest as SyncGroupRequestV1
    from kio.schema.sync_group.v1.request import SyncGroupRequestAssignment as SyncGroupRequestAssignmentV1
    from kio.schema.sync_group.v1.response import SyncGroupResponse as SyncGroupResponseV1
    from kio.schema.sync_group.v2.request import SyncGroupRequest as SyncGroupRequestV2
    from kio.schema.sync_group.v2.request import SyncGroupRequestAssignment as SyncGroupRequestAssignmentV2
    from kio.schema.sync_group.v2.response import SyncGroupResponse as SyncGroupResponseV2
    from kio.schema.sync_group.v3.request import SyncGroupRequest as SyncGroupRequestV3
    from kio.schema.sync_group.v3.request import SyncGroupRequestAssignment as SyncGroupRequestAssignmentV3
    from kio.schema.sync_group.v3.response import SyncGroupResponse as SyncGroupResponseV3
    from kio.schema.sync_group.v4.request import SyncGroupRequest as SyncGroupRequestV4
    from kio.schema.sync_group.v4.request import SyncGroupRequestAssignment as SyncGroupRequestAssignmentV4
    from kio.schema.sync_group.v4.response import SyncGroupResponse as SyncGroupResponseV4
    from kio.schema.sync_group.v5.request import SyncGroupRequest as SyncGroupRequestV5
    from kio.schema.sync_group.v5.request import SyncGroupRequestAssignment as SyncGroupRequestAssignmentV5
    from kio.schema.sync_group.v5.response import SyncGroupResponse as SyncGroupResponseV5
    from kio.schema.txn_offset_commit.v0.request import TxnOffsetCommitRequest as TxnOffsetCommitRequestV0
    from kio.schema.txn_offset_commit.v0.request import (
        TxnOffsetCommitRequestPartition as TxnOffsetCommitRequestPartitionV0,
    )
    from kio.schema.txn_offset_commit.v0.request import (
        TxnOffsetCommitRequestTopic as TxnOffsetCommitRequestTopicV0,
    )
    from kio.schema.txn_offset_commit.v0.response import TxnOffsetCommitResponse as TxnOffsetCommitResponseV0
    from kio.schema.txn_offset_commit.v1.request import TxnOffsetCommitRequest as TxnOffsetCommitRequestV1
    from kio.schema.txn_offset_commit.v1.request import (
        TxnOffsetCommitRequestPartition as TxnOffsetCommitRequestPartitionV1,
    )
    from kio.schema.txn_offset_commit.v1.request import (
        TxnOffsetCommitRequestTopic as TxnOffsetCommitRequestTopicV1,
    )
    from kio.schema.txn_offset_commit.v1.response import TxnOffsetCommitResponse as TxnOffsetCommitResponseV1
    from kio.schema.txn_offset_commit.v2.request import TxnOffsetCommitRequest as TxnOffsetCommitRequestV2
    from kio.schema.txn_offset_commit.v2.request import (
        TxnOffsetCommitRequestPartition as TxnOffsetCommitRequestPartitionV2,
    )
    from kio.schema.txn_offset_commit.v2.request import (
        TxnOffsetCommitRequestTopic as TxnOffsetCommitRequestTopicV2,
    )
    from kio.schema.txn_offset_commit.v2.response import TxnOffsetCommitResponse as TxnOffsetCommitResponseV2
    from kio.schema.txn_offset_commit.v3.request import TxnOffsetCommitRequest as TxnOffsetCommitRequestV3
    from kio.schema.txn_offset_commit.v3.request import (
        TxnOffsetCommitRequestPartition as TxnOffsetCommitRequestPartitionV3,
    )
    from kio.schema.txn_offset_commit.v3.request import (
        TxnOffsetCommitRequestTopic as TxnOffsetCommitRequestTopicV3,
    )
    from kio.schema.txn_offset_commit.v3.response import TxnOffsetCommitResponse as TxnOffsetCommitResponseV3
    from kio.schema.txn_offset_commit.v4.request import TxnOffsetCommitRequest as TxnOffsetCommitRequestV4
    from kio.schema.txn_offset_commit.v4.request import (
        TxnOffsetCommitRequestPartition as TxnOffsetCommitRequestPartitionV4,
    )
    from kio.schema.txn_offset_commit.v4.request import (
        TxnOffsetCommitRequestTopic as TxnOffsetCommitRequestTopicV4,
    )
    from kio.schema.txn_offset_commit.v4.response import TxnOffsetCommitResponse as TxnOffsetCommitResponseV4
    from kio.schema.txn_offset_commit.v5.request import TxnOffsetCommitRequest as TxnOffsetCommitRequestV5
    from kio.schema.txn_offset_commit.v5.request import (
        TxnOffsetCommitRequestPartition as TxnOffsetCommitRequestPartitionV5,
    )
    from kio.schema.txn_offset_commit.v5.request import (
        TxnOffsetCommitRequestTopic as TxnOffsetCommitRequestTopicV5,
    )
    from kio.schema.txn_offset_commit.v5.response import TxnOffsetCommitResponse as TxnOffsetCommitResponseV5
    from kio.schema.unregister_broker.v0.request import UnregisterBrokerRequest as UnregisterBrokerRequestV0
    from kio.schema.unregister_broker.v0.response import (
        UnregisterBrokerResponse as UnregisterBrokerResponseV0,
    )
    from kio.schema.update_features.v0.request import FeatureUpdateKey as FeatureUpdateKeyV0
    from kio.schema.update_features.v0.request import UpdateFeaturesRequest as UpdateFeaturesRequestV0
    from kio.schema.update_features.v0.response import UpdateFeaturesResponse as UpdateFeaturesResponseV0
    from kio.schema.update_features.v1.request import FeatureUpdateKey as FeatureUpdateKeyV1
    from kio.schema.update_features.v1.request import UpdateFeaturesRequest as UpdateFeaturesRequestV1
    from kio.schema.update_features.v1.response import UpdateFeaturesResponse as UpdateFeaturesResponseV1
    from kio.schema.update_features.v2.request import FeatureUpdateKey as FeatureUpdateKeyV2
    from kio.schema.update_features.v2.request import UpdateFeaturesRequest as UpdateFeaturesRequestV2
    from kio.schema.update_features.v2.response import UpdateFeaturesResponse as UpdateFeaturesResponseV2
    from kio.schema.write_txn_markers.v1.request import WritableTxnMarker as WritableTxnMarkerV1
    from kio.schema.write_txn_markers.v1.request import WritableTxnMarkerTopic as WritableTxnMarkerTopicV1
    from kio.schema.write_txn_markers.v1.request import WriteTxnMarkersRequest as WriteTxnMarkersRequestV1
    from kio.schema.write_txn_markers.v1.response import WriteTxnMarkersResponse as WriteTxnMarkersResponseV1
    from kio.schema.write_txn_markers.v2.request import WritableTxnMarker as WritableTxnMarkerV2
    from kio.schema.write_txn_markers.v2.request import WritableTxnMarkerTopic as WritableTxnMarkerTopicV2
    from kio.schema.write_txn_markers.v2.request import WriteTxnMarkersRequest as WriteTxnMarkersRequestV2
    from kio.schema.write_txn_markers.v2.response import WriteTxnMarkersResponse as WriteTxnMarkersResponseV2
    from minibroker.protocol.api_versions_v5 import ApiVersionsRequest as ApiVersionsRequestV5
    from minibroker.protocol.api_versions_v5 import ApiVersionsResponse as ApiVersionsResponseV5
    from minibroker.protocol.delete_groups_v3 import DeleteGroupsRequest as DeleteGroupsRequestV3
    from minibroker.protocol.delete_groups_v3 import DeleteGroupsResponse as DeleteGroupsResponseV3
    from minibroker.protocol.txn_offset_commit_v6 import TxnOffsetCommitRequest as TxnOffsetCommitRequestV6
    from minibroker.protocol.txn_offset_commit_v6 import (
        TxnOffsetCommitRequestPartition as TxnOffsetCommitRequestPartitionV6,
    )
    from minibroker.protocol.txn_offset_commit_v6 import (
        TxnOffsetCommitRequestTopic as TxnOffsetCommitRequestTopicV6,
    )
    from minibroker.protocol.txn_offset_commit_v6 import TxnOffsetCommitResponse as TxnOffsetCommitResponseV6
    from minibroker.protocol.unregister_controller_v0 import (
        UnregisterControllerRequest as UnregisterControllerRequestV0,
    )
    from minibroker.protocol.unregister_controller_v0 import (
        UnregisterControllerResponse as UnregisterControllerResponseV0,
    )

    ProduceRequest = (
        ProduceRequestV3
        | ProduceRequestV4
        | ProduceRequestV5
        | ProduceRequestV6
        | ProduceRequestV7
        | ProduceRequestV8
        | ProduceRequestV9
        | ProduceRequestV10
        | ProduceRequestV11
        | ProduceRequestV12
        | ProduceRequestV13
    )
    ProduceResponse = (
        ProduceResponseV3
        | ProduceResponseV4
        | ProduceResponseV5
        | ProduceResponseV6
        | ProduceResponseV7
        | ProduceResponseV8
        | ProduceResponseV9
        | ProduceResponseV10
        | ProduceResponseV11
        | ProduceResponseV12
        | ProduceResponseV13
    )
    PartitionProduceData = (
        PartitionProduceDataV3
        | PartitionProduceDataV4
        | PartitionProduceDataV5
        | PartitionProduceDataV6
        | PartitionProduceDataV7
        | PartitionProduceDataV8
        | PartitionProduceDataV9
        | PartitionProduceDataV10
        | PartitionProduceDataV11
        | PartitionProduceDataV12
        | PartitionProduceDataV13
    )
    TopicProduceData = (
        TopicProduceDataV3
        | TopicProduceDataV4
        | TopicProduceDataV5
        | TopicProduceDataV6
        | TopicProduceDataV7
        | TopicProduceDataV8
        | TopicProduceDataV9
        | TopicProduceDataV10
        | TopicProduceDataV11
        | TopicProduceDataV12
        | TopicProduceDataV13
    )
    FetchRequest = (
        FetchRequestV4
        | FetchRequestV5
        | FetchRequestV6
        | FetchRequestV7
        | FetchRequestV8
        | FetchRequestV9
        | FetchRequestV10
        | FetchRequestV11
        | FetchRequestV12
        | FetchRequestV13
        | FetchRequestV14
        | FetchRequestV15
        | FetchRequestV16
        | FetchRequestV17
        | FetchRequestV18
    )
    FetchResponse = (
        FetchResponseV4
        | FetchResponseV5
        | FetchResponseV6
        | FetchResponseV7
        | FetchResponseV8
        | FetchResponseV9
        | FetchResponseV10
        | FetchResponseV11
        | FetchResponseV12
        | FetchResponseV13
        | FetchResponseV14
        | FetchResponseV15
        | FetchResponseV16
        | FetchResponseV17
        | FetchResponseV18
    )
    FetchPartition = (
        FetchPartitionV4
        | FetchPartitionV5
        | FetchPartitionV6
        | FetchPartitionV7
        | FetchPartitionV8
        | FetchPartitionV9
        | FetchPartitionV10
        | FetchPartitionV11
        | FetchPartitionV12
        | FetchPartitionV13
        | FetchPartitionV14
        | FetchPartitionV15
        | FetchPartitionV16
        | FetchPartitionV17
        | FetchPartitionV18
    )
    FetchTopic = (
        FetchTopicV4
        | FetchTopicV5
        | FetchTopicV6
        | FetchTopicV7
        | FetchTopicV8
        | FetchTopicV9
        | FetchTopicV10
        | FetchTopicV11
        | FetchTopicV12
        | FetchTopicV13
        | FetchTopicV14
        | FetchTopicV15
        | FetchTopicV16
        | FetchTopicV17
        | FetchTopicV18
    )
    ForgottenTopic = (
        ForgottenTopicV7
        | ForgottenTopicV8
        | ForgottenTopicV9
        | ForgottenTopicV10
        | ForgottenTopicV11
        | ForgottenTopicV12
        | ForgottenTopicV13
        | ForgottenTopicV14
        | ForgottenTopicV15
        | ForgottenTopicV16
        | ForgottenTopicV17
        | ForgottenTopicV18
    )
    ListOffsetsRequest = (
        ListOffsetsRequestV1
        | ListOffsetsRequestV2
        | ListOffsetsRequestV3
        | ListOffsetsRequestV4
        | ListOffsetsRequestV5
        | ListOffsetsRequestV6
        | ListOffsetsRequestV7
        | ListOffsetsRequestV8
        | ListOffsetsRequestV9
        | ListOffsetsRequestV10
        | ListOffsetsRequestV11
    )
    ListOffsetsResponse = (
        ListOffsetsResponseV1
        | ListOffsetsResponseV2
        | ListOffsetsResponseV3
        | ListOffsetsResponseV4
        | ListOffsetsResponseV5
        | ListOffsetsResponseV6
        | ListOffsetsResponseV7
        | ListOffsetsResponseV8
        | ListOffsetsResponseV9
        | ListOffsetsResponseV10
        | ListOffsetsResponseV11
    )
    ListOffsetsPartition = (
        ListOffsetsPartitionV1
        | ListOffsetsPartitionV2
        | ListOffsetsPartitionV3
        | ListOffsetsPartitionV4
        | ListOffsetsPartitionV5
        | ListOffsetsPartitionV6
        | ListOffsetsPartitionV7
        | ListOffsetsPartitionV8
        | ListOffsetsPartitionV9
        | ListOffsetsPartitionV10
        | ListOffsetsPartitionV11
    )
    ListOffsetsTopic = (
        ListOffsetsTopicV1
        | ListOffsetsTopicV2
        | ListOffsetsTopicV3
        | ListOffsetsTopicV4
        | ListOffsetsTopicV5
        | ListOffsetsTopicV6
        | ListOffsetsTopicV7
        | ListOffsetsTopicV8
        | ListOffsetsTopicV9
        | ListOffsetsTopicV10
        | ListOffsetsTopicV11
    )
    MetadataRequest = (
        MetadataRequestV0
        | MetadataRequestV1
        | MetadataRequestV2
        | MetadataRequestV3
        | MetadataRequestV4
        | MetadataRequestV5
        | MetadataRequestV6
        | MetadataRequestV7
        | MetadataRequestV8
        | MetadataRequestV9
        | MetadataRequestV10
        | MetadataRequestV11
        | MetadataRequestV12
        | MetadataRequestV13
    )
    MetadataResponse = (
        MetadataResponseV0
        | MetadataResponseV1
        | MetadataResponseV2
        | MetadataResponseV3
        | MetadataResponseV4
        | MetadataResponseV5
        | MetadataResponseV6
        | MetadataResponseV7
        | MetadataResponseV8
        | MetadataResponseV9
        | MetadataResponseV10
        | MetadataResponseV11
        | MetadataResponseV12
        | MetadataResponseV13
    )
    MetadataRequestTopic = (
        MetadataRequestTopicV0
        | MetadataRequestTopicV1
        | MetadataRequestTopicV2
        | MetadataRequestTopicV3
        | MetadataRequestTopicV4
        | MetadataRequestTopicV5
        | MetadataRequestTopicV6
        | MetadataRequestTopicV7
        | MetadataRequestTopicV8
        | MetadataRequestTopicV9
        | MetadataRequestTopicV10
        | MetadataRequestTopicV11
        | MetadataRequestTopicV12
        | MetadataRequestTopicV13
    )
    OffsetCommitRequest = (
        OffsetCommitRequestV2
        | OffsetCommitRequestV3
        | OffsetCommitRequestV4
        | OffsetCommitRequestV5
        | OffsetCommitRequestV6
        | OffsetCommitRequestV7
        | OffsetCommitRequestV8
        | OffsetCommitRequestV9
        | OffsetCommitRequestV10
    )
    OffsetCommitResponse = (
        OffsetCommitResponseV2
        | OffsetCommitResponseV3
        | OffsetCommitResponseV4
        | OffsetCommitResponseV5
        | OffsetCommitResponseV6
        | OffsetCommitResponseV7
        | OffsetCommitResponseV8
        | OffsetCommitResponseV9
        | OffsetCommitResponseV10
    )
    OffsetCommitRequestPartition = (
        OffsetCommitRequestPartitionV2
        | OffsetCommitRequestPartitionV3
        | OffsetCommitRequestPartitionV4
        | OffsetCommitRequestPartitionV5
        | OffsetCommitRequestPartitionV6
        | OffsetCommitRequestPartitionV7
        | OffsetCommitRequestPartitionV8
        | OffsetCommitRequestPartitionV9
        | OffsetCommitRequestPartitionV10
    )
    OffsetCommitRequestTopic = (
        OffsetCommitRequestTopicV2
        | OffsetCommitRequestTopicV3
        | OffsetCommitRequestTopicV4
        | OffsetCommitRequestTopicV5
        | OffsetCommitRequestTopicV6
        | OffsetCommitRequestTopicV7
        | OffsetCommitRequestTopicV8
        | OffsetCommitRequestTopicV9
        | OffsetCommitRequestTopicV10
    )
    OffsetFetchRequest = (
        OffsetFetchRequestV1
        | OffsetFetchRequestV2
        | OffsetFetchRequestV3
        | OffsetFetchRequestV4
        | OffsetFetchRequestV5
        | OffsetFetchRequestV6
        | OffsetFetchRequestV7
        | OffsetFetchRequestV8
        | OffsetFetchRequestV9
        | OffsetFetchRequestV10
    )
    OffsetFetchResponse = (
        OffsetFetchResponseV1
        | OffsetFetchResponseV2
        | OffsetFetchResponseV3
        | OffsetFetchResponseV4
        | OffsetFetchResponseV5
        | OffsetFetchResponseV6
        | OffsetFetchResponseV7
        | OffsetFetchResponseV8
        | OffsetFetchResponseV9
        | OffsetFetchResponseV10
    )
    OffsetFetchRequestTopic = (
        OffsetFetchRequestTopicV1
        | OffsetFetchRequestTopicV2
        | OffsetFetchRequestTopicV3
        | OffsetFetchRequestTopicV4
        | OffsetFetchRequestTopicV5
        | OffsetFetchRequestTopicV6
        | OffsetFetchRequestTopicV7
    )
    OffsetFetchRequestTopics = (
        OffsetFetchRequestTopicsV8 | OffsetFetchRequestTopicsV9 | OffsetFetchRequestTopicsV10
    )
    OffsetFetchRequestGroup = (
        OffsetFetchRequestGroupV8 | OffsetFetchRequestGroupV9 | OffsetFetchRequestGroupV10
    )
    FindCoordinatorRequest = (
        FindCoordinatorRequestV0
        | FindCoordinatorRequestV1
        | FindCoordinatorRequestV2
        | FindCoordinatorRequestV3
        | FindCoordinatorRequestV4
        | FindCoordinatorRequestV5
        | FindCoordinatorRequestV6
    )
    FindCoordinatorResponse = (
        FindCoordinatorResponseV0
        | FindCoordinatorResponseV1
        | FindCoordinatorResponseV2
        | FindCoordinatorResponseV3
        | FindCoordinatorResponseV4
        | FindCoordinatorResponseV5
        | FindCoordinatorResponseV6
    )
    JoinGroupRequest = (
        JoinGroupRequestV0
        | JoinGroupRequestV1
        | JoinGroupRequestV2
        | JoinGroupRequestV3
        | JoinGroupRequestV4
        | JoinGroupRequestV5
        | JoinGroupRequestV6
        | JoinGroupRequestV7
        | JoinGroupRequestV8
        | JoinGroupRequestV9
    )
    JoinGroupResponse = (
        JoinGroupResponseV0
        | JoinGroupResponseV1
        | JoinGroupResponseV2
        | JoinGroupResponseV3
        | JoinGroupResponseV4
        | JoinGroupResponseV5
        | JoinGroupResponseV6
        | JoinGroupResponseV7
        | JoinGroupResponseV8
        | JoinGroupResponseV9
    )
    JoinGroupRequestProtocol = (
        JoinGroupRequestProtocolV0
        | JoinGroupRequestProtocolV1
        | JoinGroupRequestProtocolV2
        | JoinGroupRequestProtocolV3
        | JoinGroupRequestProtocolV4
        | JoinGroupRequestProtocolV5
        | JoinGroupRequestProtocolV6
        | JoinGroupRequestProtocolV7
        | JoinGroupRequestProtocolV8
        | JoinGroupRequestProtocolV9
    )
    HeartbeatRequest = (
        HeartbeatRequestV0 | HeartbeatRequestV1 | HeartbeatRequestV2 | HeartbeatRequestV3 | HeartbeatRequestV4
    )
    HeartbeatResponse = (
        HeartbeatResponseV0
        | HeartbeatResponseV1
        | HeartbeatResponseV2
        | HeartbeatResponseV3
        | HeartbeatResponseV4
    )
    LeaveGroupRequest = (
        LeaveGroupRequestV0
        | LeaveGroupRequestV1
        | LeaveGroupRequestV2
        | LeaveGroupRequestV3
        | LeaveGroupRequestV4
        | LeaveGroupRequestV5
    )
    LeaveGroupResponse = (
        LeaveGroupResponseV0
        | LeaveGroupResponseV1
        | LeaveGroupResponseV2
        | LeaveGroupResponseV3
        | LeaveGroupResponseV4
        | LeaveGroupResponseV5
    )
    MemberIdentity = MemberIdentityV3 | MemberIdentityV4 | MemberIdentityV5
    SyncGroupRequest = (
        SyncGroupRequestV0
        | SyncGroupRequestV1
        | SyncGroupRequestV2
        | SyncGroupRequestV3
        | SyncGroupRequestV4
        | SyncGroupRequestV5
    )
    SyncGroupResponse = (
        SyncGroupResponseV0
        | SyncGroupResponseV1
        | SyncGroupResponseV2
        | SyncGroupResponseV3
        | SyncGroupResponseV4
        | SyncGroupResponseV5
    )
    SyncGroupRequestAssignment = (
        SyncGroupRequestAssignmentV0
        | SyncGroupRequestAssignmentV1
        | SyncGroupRequestAssignmentV2
        | SyncGroupRequestAssignmentV3
        | SyncGroupRequestAssignmentV4
        | SyncGroupRequestAssignmentV5
    )
    DescribeGroupsRequest = (
        DescribeGroupsRequestV0
        | DescribeGroupsRequestV1
        | DescribeGroupsRequestV2
        | DescribeGroupsRequestV3
        | DescribeGroupsRequestV4
        | DescribeGroupsRequestV5
        | DescribeGroupsRequestV6
    )
    DescribeGroupsResponse = (
        DescribeGroupsResponseV0
        | DescribeGroupsResponseV1
        | DescribeGroupsResponseV2
        | DescribeGroupsResponseV3
        | DescribeGroupsResponseV4
        | DescribeGroupsResponseV5
        | DescribeGroupsResponseV6
    )
    ListGroupsRequest = (
        ListGroupsRequestV0
        | ListGroupsRequestV1
        | ListGroupsRequestV2
        | ListGroupsRequestV3
        | ListGroupsRequestV4
        | ListGroupsRequestV5
    )
    ListGroupsResponse = (
        ListGroupsResponseV0
        | ListGroupsResponseV1
        | ListGroupsResponseV2
        | ListGroupsResponseV3
        | ListGroupsResponseV4
        | ListGroupsResponseV5
    )
    SaslHandshakeRequest = SaslHandshakeRequestV0 | SaslHandshakeRequestV1
    SaslHandshakeResponse = SaslHandshakeResponseV0 | SaslHandshakeResponseV1
    ApiVersionsRequest = (
        ApiVersionsRequestV0
        | ApiVersionsRequestV1
        | ApiVersionsRequestV2
        | ApiVersionsRequestV3
        | ApiVersionsRequestV4
        | ApiVersionsRequestV5
    )
    ApiVersionsResponse = (
        ApiVersionsResponseV0
        | ApiVersionsResponseV1
        | ApiVersionsResponseV2
        | ApiVersionsResponseV3
        | ApiVersionsResponseV4
        | ApiVersionsResponseV5
    )
    CreateTopicsRequest = (
        CreateTopicsRequestV2
        | CreateTopicsRequestV3
        | CreateTopicsRequestV4
        | CreateTopicsRequestV5
        | CreateTopicsRequestV6
        | CreateTopicsRequestV7
    )
    CreateTopicsResponse = (
        CreateTopicsResponseV2
        | CreateTopicsResponseV3
        | CreateTopicsResponseV4
        | CreateTopicsResponseV5
        | CreateTopicsResponseV6
        | CreateTopicsResponseV7
    )
    CreatableReplicaAssignment = (
        CreatableReplicaAssignmentV2
        | CreatableReplicaAssignmentV3
        | CreatableReplicaAssignmentV4
        | CreatableReplicaAssignmentV5
        | CreatableReplicaAssignmentV6
        | CreatableReplicaAssignmentV7
    )
    CreatableTopicConfig = (
        CreatableTopicConfigV2
        | CreatableTopicConfigV3
        | CreatableTopicConfigV4
        | CreatableTopicConfigV5
        | CreatableTopicConfigV6
        | CreatableTopicConfigV7
    )
    CreatableTopic = (
        CreatableTopicV2
        | CreatableTopicV3
        | CreatableTopicV4
        | CreatableTopicV5
        | CreatableTopicV6
        | CreatableTopicV7
    )
    DeleteTopicsRequest = (
        DeleteTopicsRequestV1
        | DeleteTopicsRequestV2
        | DeleteTopicsRequestV3
        | DeleteTopicsRequestV4
        | DeleteTopicsRequestV5
        | DeleteTopicsRequestV6
    )
    DeleteTopicsResponse = (
        DeleteTopicsResponseV1
        | DeleteTopicsResponseV2
        | DeleteTopicsResponseV3
        | DeleteTopicsResponseV4
        | DeleteTopicsResponseV5
        | DeleteTopicsResponseV6
    )
    DeleteTopicState = DeleteTopicStateV6
    DeleteRecordsRequest = DeleteRecordsRequestV0 | DeleteRecordsRequestV1 | DeleteRecordsRequestV2
    DeleteRecordsResponse = DeleteRecordsResponseV0 | DeleteRecordsResponseV1 | DeleteRecordsResponseV2
    DeleteRecordsPartition = DeleteRecordsPartitionV0 | DeleteRecordsPartitionV1 | DeleteRecordsPartitionV2
    DeleteRecordsTopic = DeleteRecordsTopicV0 | DeleteRecordsTopicV1 | DeleteRecordsTopicV2
    InitProducerIdRequest = (
        InitProducerIdRequestV0
        | InitProducerIdRequestV1
        | InitProducerIdRequestV2
        | InitProducerIdRequestV3
        | InitProducerIdRequestV4
        | InitProducerIdRequestV5
    )
    InitProducerIdResponse = (
        InitProducerIdResponseV0
        | InitProducerIdResponseV1
        | InitProducerIdResponseV2
        | InitProducerIdResponseV3
        | InitProducerIdResponseV4
        | InitProducerIdResponseV5
    )
    OffsetForLeaderEpochRequest = (
        OffsetForLeaderEpochRequestV2 | OffsetForLeaderEpochRequestV3 | OffsetForLeaderEpochRequestV4
    )
    OffsetForLeaderEpochResponse = (
        OffsetForLeaderEpochResponseV2 | OffsetForLeaderEpochResponseV3 | OffsetForLeaderEpochResponseV4
    )
    OffsetForLeaderPartition = (
        OffsetForLeaderPartitionV2 | OffsetForLeaderPartitionV3 | OffsetForLeaderPartitionV4
    )
    OffsetForLeaderTopic = OffsetForLeaderTopicV2 | OffsetForLeaderTopicV3 | OffsetForLeaderTopicV4
    AddPartitionsToTxnRequest = (
        AddPartitionsToTxnRequestV0
        | AddPartitionsToTxnRequestV1
        | AddPartitionsToTxnRequestV2
        | AddPartitionsToTxnRequestV3
    )
    AddPartitionsToTxnResponse = (
        AddPartitionsToTxnResponseV0
        | AddPartitionsToTxnResponseV1
        | AddPartitionsToTxnResponseV2
        | AddPartitionsToTxnResponseV3
    )
    AddPartitionsToTxnTopic = (
        AddPartitionsToTxnTopicV0
        | AddPartitionsToTxnTopicV1
        | AddPartitionsToTxnTopicV2
        | AddPartitionsToTxnTopicV3
    )
    from kio.schema.alter_share_group_offsets.v0.request import (
        AlterShareGroupOffsetsRequest as AlterShareGroupOffsetsRequestV0,
    )
    from kio.schema.alter_share_group_offsets.v0.response import (
        AlterShareGroupOffsetsResponse as AlterShareGroupOffsetsResponseV0,
    )
    from kio.schema.delete_share_group_offsets.v0.request import (
        DeleteShareGroupOffsetsRequest as DeleteShareGroupOffsetsRequestV0,
    )
    from kio.schema.delete_share_group_offsets.v0.response import (
        DeleteShareGroupOffsetsResponse as DeleteShareGroupOffsetsResponseV0,
    )
    from kio.schema.describe_share_group_offsets.v0.request import (
        DescribeShareGroupOffsetsRequest as DescribeShareGroupOffsetsRequestV0,
    )
    from kio.schema.describe_share_group_offsets.v0.response import (
        DescribeShareGroupOffsetsResponse as DescribeShareGroupOffsetsResponseV0,
    )
    from kio.schema.describe_share_group_offsets.v1.request import (
        DescribeShareGroupOffsetsRequest as DescribeShareGroupOffsetsRequestV1,
    )
    from kio.schema.describe_share_group_offsets.v1.response import (
        DescribeShareGroupOffsetsResponse as DescribeShareGroupOffsetsResponseV1,
    )
    from kio.schema.share_acknowledge.v1.request import ShareAcknowledgeRequest as ShareAcknowledgeRequestV1
    from kio.schema.share_acknowledge.v1.response import (
        ShareAcknowledgeResponse as ShareAcknowledgeResponseV1,
    )
    from kio.schema.share_acknowledge.v2.request import ShareAcknowledgeRequest as ShareAcknowledgeRequestV2
    from kio.schema.share_acknowledge.v2.response import (
        ShareAcknowledgeResponse as ShareAcknowledgeResponseV2,
    )
    from kio.schema.share_fetch.v1.request import ShareFetchRequest as ShareFetchRequestV1
    from kio.schema.share_fetch.v1.response import ShareFetchResponse as ShareFetchResponseV1
    from kio.schema.share_fetch.v2.request import ShareFetchRequest as ShareFetchRequestV2
    from kio.schema.share_fetch.v2.response import ShareFetchResponse as ShareFetchResponseV2
    from kio.schema.share_group_describe.v1.request import (
        ShareGroupDescribeRequest as ShareGroupDescribeRequestV1,
    )
    from kio.schema.share_group_describe.v1.response import (
        ShareGroupDescribeResponse as ShareGroupDescribeResponseV1,
    )
    from kio.schema.share_group_heartbeat.v1.request import (
        ShareGroupHeartbeatRequest as ShareGroupHeartbeatRequestV1,
    )
    from kio.schema.share_group_heartbeat.v1.response import (
        ShareGroupHeartbeatResponse as ShareGroupHeartbeatResponseV1,
    )

    AddOffsetsToTxnRequest = (
        AddOffsetsToTxnRequestV0
        | AddOffsetsToTxnRequestV1
        | AddOffsetsToTxnRequestV2
        | AddOffsetsToTxnRequestV3
        | AddOffsetsToTxnRequestV4
    )
    AddOffsetsToTxnResponse = (
        AddOffsetsToTxnResponseV0
        | AddOffsetsToTxnResponseV1
        | AddOffsetsToTxnResponseV2
        | AddOffsetsToTxnResponseV3
        | AddOffsetsToTxnResponseV4
    )
    EndTxnRequest = (
        EndTxnRequestV0
        | EndTxnRequestV1
        | EndTxnRequestV2
        | EndTxnRequestV3
        | EndTxnRequestV4
        | EndTxnRequestV5
    )
    EndTxnResponse = (
        EndTxnResponseV0
        | EndTxnResponseV1
        | EndTxnResponseV2
        | EndTxnResponseV3
        | EndTxnResponseV4
        | EndTxnResponseV5
    )
    WriteTxnMarkersRequest = WriteTxnMarkersRequestV1 | WriteTxnMarkersRequestV2
    WriteTxnMarkersResponse = WriteTxnMarkersResponseV1 | WriteTxnMarkersResponseV2
    WritableTxnMarkerTopic = WritableTxnMarkerTopicV1 | WritableTxnMarkerTopicV2
    WritableTxnMarker = WritableTxnMarkerV1 | WritableTxnMarkerV2
    TxnOffsetCommitRequest = (
        TxnOffsetCommitRequestV0
        | TxnOffsetCommitRequestV1
        | TxnOffsetCommitRequestV2
        | TxnOffsetCommitRequestV3
        | TxnOffsetCommitRequestV4
        | TxnOffsetCommitRequestV5
        | TxnOffsetCommitRequestV6
    )
    TxnOffsetCommitResponse = (
        TxnOffsetCommitResponseV0
        | TxnOffsetCommitResponseV1
        | TxnOffsetCommitResponseV2
        | TxnOffsetCommitResponseV3
        | TxnOffsetCommitResponseV4
        | TxnOffsetCommitResponseV5
        | TxnOffsetCommitResponseV6
    )
    TxnOffsetCommitRequestPartition = (
        TxnOffsetCommitRequestPartitionV0
        | TxnOffsetCommitRequestPartitionV1
        | TxnOffsetCommitRequestPartitionV2
        | TxnOffsetCommitRequestPartitionV3
        | TxnOffsetCommitRequestPartitionV4
        | TxnOffsetCommitRequestPartitionV5
        | TxnOffsetCommitRequestPartitionV6
    )
    TxnOffsetCommitRequestTopic = (
        TxnOffsetCommitRequestTopicV0
        | TxnOffsetCommitRequestTopicV1
        | TxnOffsetCommitRequestTopicV2
        | TxnOffsetCommitRequestTopicV3
        | TxnOffsetCommitRequestTopicV4
        | TxnOffsetCommitRequestTopicV5
        | TxnOffsetCommitRequestTopicV6
    )
    DescribeAclsRequest = DescribeAclsRequestV1 | DescribeAclsRequestV2 | DescribeAclsRequestV3
    DescribeAclsResponse = DescribeAclsResponseV1 | DescribeAclsResponseV2 | DescribeAclsResponseV3
    CreateAclsRequest = CreateAclsRequestV1 | CreateAclsRequestV2 | CreateAclsRequestV3
    CreateAclsResponse = CreateAclsResponseV1 | CreateAclsResponseV2 | CreateAclsResponseV3
    AclCreation = AclCreationV1 | AclCreationV2 | AclCreationV3
    DeleteAclsRequest = DeleteAclsRequestV1 | DeleteAclsRequestV2 | DeleteAclsRequestV3
    DeleteAclsResponse = DeleteAclsResponseV1 | DeleteAclsResponseV2 | DeleteAclsResponseV3
    DeleteAclsFilter = DeleteAclsFilterV1 | DeleteAclsFilterV2 | DeleteAclsFilterV3
    DescribeConfigsRequest = (
        DescribeConfigsRequestV1
        | DescribeConfigsRequestV2
        | DescribeConfigsRequestV3
        | DescribeConfigsRequestV4
    )
    DescribeConfigsResponse = (
        DescribeConfigsResponseV1
        | DescribeConfigsResponseV2
        | DescribeConfigsResponseV3
        | DescribeConfigsResponseV4
    )
    DescribeConfigsResource = (
        DescribeConfigsResourceV1
        | DescribeConfigsResourceV2
        | DescribeConfigsResourceV3
        | DescribeConfigsResourceV4
    )
    AlterConfigsRequest = AlterConfigsRequestV0 | AlterConfigsRequestV1 | AlterConfigsRequestV2
    AlterConfigsResponse = AlterConfigsResponseV0 | AlterConfigsResponseV1 | AlterConfigsResponseV2
    AlterConfigsAlterableConfig = (
        AlterConfigsAlterableConfigV0 | AlterConfigsAlterableConfigV1 | AlterConfigsAlterableConfigV2
    )
    AlterConfigsAlterConfigsResource = (
        AlterConfigsAlterConfigsResourceV0
        | AlterConfigsAlterConfigsResourceV1
        | AlterConfigsAlterConfigsResourceV2
    )
    DescribeLogDirsRequest = (
        DescribeLogDirsRequestV1
        | DescribeLogDirsRequestV2
        | DescribeLogDirsRequestV3
        | DescribeLogDirsRequestV4
        | DescribeLogDirsRequestV5
    )
    DescribeLogDirsResponse = (
        DescribeLogDirsResponseV1
        | DescribeLogDirsResponseV2
        | DescribeLogDirsResponseV3
        | DescribeLogDirsResponseV4
        | DescribeLogDirsResponseV5
    )
    DescribableLogDirTopic = (
        DescribableLogDirTopicV1
        | DescribableLogDirTopicV2
        | DescribableLogDirTopicV3
        | DescribableLogDirTopicV4
        | DescribableLogDirTopicV5
    )
    SaslAuthenticateRequest = (
        SaslAuthenticateRequestV0 | SaslAuthenticateRequestV1 | SaslAuthenticateRequestV2
    )
    SaslAuthenticateResponse = (
        SaslAuthenticateResponseV0 | SaslAuthenticateResponseV1 | SaslAuthenticateResponseV2
    )
    CreatePartitionsRequest = (
        CreatePartitionsRequestV0
        | CreatePartitionsRequestV1
        | CreatePartitionsRequestV2
        | CreatePartitionsRequestV3
    )
    CreatePartitionsResponse = (
        CreatePartitionsResponseV0
        | CreatePartitionsResponseV1
        | CreatePartitionsResponseV2
        | CreatePartitionsResponseV3
    )
    CreatePartitionsAssignment = (
        CreatePartitionsAssignmentV0
        | CreatePartitionsAssignmentV1
        | CreatePartitionsAssignmentV2
        | CreatePartitionsAssignmentV3
    )
    CreatePartitionsTopic = (
        CreatePartitionsTopicV0 | CreatePartitionsTopicV1 | CreatePartitionsTopicV2 | CreatePartitionsTopicV3
    )
    DeleteGroupsRequest = (
        DeleteGroupsRequestV0 | DeleteGroupsRequestV1 | DeleteGroupsRequestV2 | DeleteGroupsRequestV3
    )
    DeleteGroupsResponse = (
        DeleteGroupsResponseV0 | DeleteGroupsResponseV1 | DeleteGroupsResponseV2 | DeleteGroupsResponseV3
    )
    ElectLeadersRequest = ElectLeadersRequestV0 | ElectLeadersRequestV1 | ElectLeadersRequestV2
    ElectLeadersResponse = ElectLeadersResponseV0 | ElectLeadersResponseV1 | ElectLeadersResponseV2
    TopicPartitions = TopicPartitionsV0 | TopicPartitionsV1 | TopicPartitionsV2
    IncrementalAlterConfigsRequest = IncrementalAlterConfigsRequestV0 | IncrementalAlterConfigsRequestV1
    IncrementalAlterConfigsResponse = IncrementalAlterConfigsResponseV0 | IncrementalAlterConfigsResponseV1
    IncrementalAlterConfigsAlterableConfig = (
        IncrementalAlterConfigsAlterableConfigV0 | IncrementalAlterConfigsAlterableConfigV1
    )
    IncrementalAlterConfigsAlterConfigsResource = (
        IncrementalAlterConfigsAlterConfigsResourceV0 | IncrementalAlterConfigsAlterConfigsResourceV1
    )
    OffsetDeleteRequest = OffsetDeleteRequestV0
    OffsetDeleteResponse = OffsetDeleteResponseV0
    OffsetDeleteRequestPartition = OffsetDeleteRequestPartitionV0
    OffsetDeleteRequestTopic = OffsetDeleteRequestTopicV0
    DescribeUserScramCredentialsRequest = DescribeUserScramCredentialsRequestV0
    DescribeUserScramCredentialsResponse = DescribeUserScramCredentialsResponseV0
    UserName = UserNameV0
    AlterUserScramCredentialsRequest = AlterUserScramCredentialsRequestV0
    AlterUserScramCredentialsResponse = AlterUserScramCredentialsResponseV0
    ScramCredentialDeletion = ScramCredentialDeletionV0
    ScramCredentialUpsertion = ScramCredentialUpsertionV0
    DescribeClusterRequest = DescribeClusterRequestV0 | DescribeClusterRequestV1 | DescribeClusterRequestV2
    DescribeClusterResponse = (
        DescribeClusterResponseV0 | DescribeClusterResponseV1 | DescribeClusterResponseV2
    )
    DescribeProducersRequest = DescribeProducersRequestV0
    DescribeProducersResponse = DescribeProducersResponseV0
    DescribeProducersTopicRequest = DescribeProducersTopicRequestV0
    DescribeTransactionsRequest = DescribeTransactionsRequestV0
    DescribeTransactionsResponse = DescribeTransactionsResponseV0
    ListTransactionsRequest = (
        ListTransactionsRequestV0 | ListTransactionsRequestV1 | ListTransactionsRequestV2
    )
    ListTransactionsResponse = (
        ListTransactionsResponseV0 | ListTransactionsResponseV1 | ListTransactionsResponseV2
    )
    DescribeTopicPartitionsRequest = DescribeTopicPartitionsRequestV0
    DescribeTopicPartitionsResponse = DescribeTopicPartitionsResponseV0
    DescribeTopicPartitionsTopicRequest = DescribeTopicPartitionsTopicRequestV0
    Cursor = CursorV0
    GetTelemetrySubscriptionsRequest = GetTelemetrySubscriptionsRequestV0
    GetTelemetrySubscriptionsResponse = GetTelemetrySubscriptionsResponseV0
    PushTelemetryRequest = PushTelemetryRequestV0
    PushTelemetryResponse = PushTelemetryResponseV0
    ListConfigResourcesRequest = ListConfigResourcesRequestV0 | ListConfigResourcesRequestV1
    ListConfigResourcesResponse = ListConfigResourcesResponseV0 | ListConfigResourcesResponseV1
    DescribeClientQuotasRequest = DescribeClientQuotasRequestV0 | DescribeClientQuotasRequestV1
    DescribeClientQuotasResponse = DescribeClientQuotasResponseV0 | DescribeClientQuotasResponseV1
    AlterClientQuotasRequest = AlterClientQuotasRequestV0 | AlterClientQuotasRequestV1
    AlterClientQuotasResponse = AlterClientQuotasResponseV0 | AlterClientQuotasResponseV1
    CreateDelegationTokenRequest = (
        CreateDelegationTokenRequestV1 | CreateDelegationTokenRequestV2 | CreateDelegationTokenRequestV3
    )
    CreateDelegationTokenResponse = (
        CreateDelegationTokenResponseV1 | CreateDelegationTokenResponseV2 | CreateDelegationTokenResponseV3
    )
    RenewDelegationTokenRequest = RenewDelegationTokenRequestV1 | RenewDelegationTokenRequestV2
    RenewDelegationTokenResponse = RenewDelegationTokenResponseV1 | RenewDelegationTokenResponseV2
    ExpireDelegationTokenRequest = ExpireDelegationTokenRequestV1 | ExpireDelegationTokenRequestV2
    ExpireDelegationTokenResponse = ExpireDelegationTokenResponseV1 | ExpireDelegationTokenResponseV2
    DescribeDelegationTokenRequest = (
        DescribeDelegationTokenRequestV1 | DescribeDelegationTokenRequestV2 | DescribeDelegationTokenRequestV3
    )
    DescribeDelegationTokenResponse = (
        DescribeDelegationTokenResponseV1
        | DescribeDelegationTokenResponseV2
        | DescribeDelegationTokenResponseV3
    )
    UpdateFeaturesRequest = UpdateFeaturesRequestV0 | UpdateFeaturesRequestV1 | UpdateFeaturesRequestV2
    UpdateFeaturesResponse = UpdateFeaturesResponseV0 | UpdateFeaturesResponseV1 | UpdateFeaturesResponseV2
    FeatureUpdateKey = FeatureUpdateKeyV0 | FeatureUpdateKeyV1 | FeatureUpdateKeyV2
    AlterReplicaLogDirsRequest = AlterReplicaLogDirsRequestV1 | AlterReplicaLogDirsRequestV2
    AlterReplicaLogDirsResponse = AlterReplicaLogDirsResponseV1 | AlterReplicaLogDirsResponseV2
    AlterPartitionReassignmentsRequest = (
        AlterPartitionReassignmentsRequestV0 | AlterPartitionReassignmentsRequestV1
    )
    AlterPartitionReassignmentsResponse = (
        AlterPartitionReassignmentsResponseV0 | AlterPartitionReassignmentsResponseV1
    )
    ListPartitionReassignmentsRequest = ListPartitionReassignmentsRequestV0
    ListPartitionReassignmentsResponse = ListPartitionReassignmentsResponseV0
    DescribeQuorumRequest = DescribeQuorumRequestV0 | DescribeQuorumRequestV1 | DescribeQuorumRequestV2
    DescribeQuorumResponse = DescribeQuorumResponseV0 | DescribeQuorumResponseV1 | DescribeQuorumResponseV2
    UnregisterBrokerRequest = UnregisterBrokerRequestV0
    UnregisterBrokerResponse = UnregisterBrokerResponseV0
    AddRaftVoterRequest = AddRaftVoterRequestV0 | AddRaftVoterRequestV1
    AddRaftVoterResponse = AddRaftVoterResponseV0 | AddRaftVoterResponseV1
    RemoveRaftVoterRequest = RemoveRaftVoterRequestV0
    RemoveRaftVoterResponse = RemoveRaftVoterResponseV0
    UnregisterControllerRequest = UnregisterControllerRequestV0
    UnregisterControllerResponse = UnregisterControllerResponseV0
    ConsumerGroupHeartbeatRequest = ConsumerGroupHeartbeatRequestV0 | ConsumerGroupHeartbeatRequestV1
    ConsumerGroupHeartbeatResponse = ConsumerGroupHeartbeatResponseV0 | ConsumerGroupHeartbeatResponseV1
    ConsumerGroupDescribeRequest = ConsumerGroupDescribeRequestV0 | ConsumerGroupDescribeRequestV1
    ConsumerGroupDescribeResponse = ConsumerGroupDescribeResponseV0 | ConsumerGroupDescribeResponseV1
    ShareGroupHeartbeatRequest = ShareGroupHeartbeatRequestV1
    ShareGroupHeartbeatResponse = ShareGroupHeartbeatResponseV1
    ShareGroupDescribeRequest = ShareGroupDescribeRequestV1
    ShareGroupDescribeResponse = ShareGroupDescribeResponseV1
    ShareFetchRequest = ShareFetchRequestV1 | ShareFetchRequestV2
    ShareFetchResponse = ShareFetchResponseV1 | ShareFetchResponseV2
    ShareAcknowledgeRequest = ShareAcknowledgeRequestV1 | ShareAcknowledgeRequestV2
    ShareAcknowledgeResponse = ShareAcknowledgeResponseV1 | ShareAcknowledgeResponseV2
    DescribeShareGroupOffsetsRequest = DescribeShareGroupOffsetsRequestV0 | DescribeShareGroupOffsetsRequestV1
    DescribeShareGroupOffsetsResponse = (
        DescribeShareGroupOffsetsResponseV0 | DescribeShareGroupOffsetsResponseV1
    )
    AlterShareGroupOffsetsRequest = AlterShareGroupOffsetsRequestV0
    AlterShareGroupOffsetsResponse = AlterShareGroupOffsetsResponseV0
    DeleteShareGroupOffsetsRequest = DeleteShareGroupOffsetsRequestV0
    DeleteShareGroupOffsetsResponse = DeleteShareGroupOffsetsResponseV0
